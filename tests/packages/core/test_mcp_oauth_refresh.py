"""OAuth tokens of an MCP server over HTTP refresh without a person: across a restart (the
stored expiry says the token is expired or about to be) and when the server answers 401 to a
token it revoked. When the refresh is refused too, calls say a person must authorize again,
the connection waits for one, and once they have, calls work again. Tokens never show in
results, logs or the data folder (tests/fixtures/mcp_oauth_server.py is the SDK's server,
its own authorization server, whose token lifetime and revocations the tests control)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

import corral
from corral.connect.mcp_oauth import EXPIRY_MARGIN_SECONDS
from corral.connect.mcp_remote import oauth_credential_name
from corral.packages.core.mcp_servers import McpServers
from corral.platform import Platform
from corral.tools.results import ToolResult
from tests.conftest import DEMO
from tests.fixtures.mcp_oauth_server import Issuer, build_app
from tests.packages.core.test_mcp_http import LOOPBACK_ALLOWED, read_everything
from tests.server.loopback import bind_loopback, serving


@pytest.fixture
async def remote() -> AsyncIterator[tuple[str, Issuer]]:
    sock, base = bind_loopback()
    issuer = Issuer()
    async with serving(build_app(base, issuer), sock=sock):
        yield f"{base}/mcp", issuer


def opened(data_dir: Path) -> AbstractAsyncContextManager[Platform]:
    return corral.open(
        data_dir,
        package_paths=[DEMO],
        public_url="http://127.0.0.1:9",
        services=LOOPBACK_ALLOWED,
    )


def servers(platform: Platform) -> McpServers:
    found = platform.services.get(McpServers)
    assert found is not None
    return found


async def authorize_as_person(platform: Platform, seen: list[ToolResult]) -> None:
    """Ask connect for the link, open it as the person, hand the redirect's code back (as
    the callback route does; tests/packages/core/test_mcp_http.py covers the route)."""
    asked = await platform.call_tool("connect", {"authorize": [{"kind": "mcp", "name": "remote"}]})
    seen.append(asked)
    [step] = (asked.data or {})["applied"]
    assert step["handoff"] is not None, asked.text
    async with httpx.AsyncClient(timeout=30) as person:
        consent = await person.get(step["handoff"]["url"])
    query = parse_qs(urlsplit(consent.headers["location"]).query)
    view = await servers(platform).complete_authorization(
        state=query["state"][0], code=query["code"][0]
    )
    assert view is not None and view.state == "connected", view


async def connect_remote(platform: Platform, url: str, seen: list[ToolResult]) -> None:
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "remote", "url": url}]}
    )
    seen.append(added)
    assert not added.is_error, added.text
    await authorize_as_person(platform, seen)


async def multiply(platform: Platform, a: int, b: int) -> ToolResult:
    return await platform.call_tool("remote_multiply", {"a": a, "b": b}, profile="auto")


async def stored(platform: Platform) -> dict[str, Any]:
    owner = (await platform.caller()).user_id
    raw = await platform.credentials.lookup(oauth_credential_name("remote"), user_id=owner)
    assert raw is not None
    return dict(json.loads(raw))


def assert_never_shown(
    issuer: Issuer, seen: list[ToolResult], caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    person = ("httpx", "httpcore")
    logged = [r.getMessage() for r in caplog.records if r.name.split(".")[0] not in person]
    shown = "\n".join(f"{r.text}\n{r.data!r}" for r in seen) + "\n".join(logged)
    on_disk = read_everything(data_dir)
    assert len(issuer.issued) >= 5
    for secret in issuer.issued:
        assert secret not in shown
        assert secret.encode() not in on_disk


async def test_a_token_expired_while_down_is_refreshed_at_restart_without_a_person(
    data_dir: Path, remote: tuple[str, Issuer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url, issuer = remote
    seen: list[ToolResult] = []
    # Tokens that live less than the refresh margin: at the restart the stored expiry says
    # "about to expire" and the platform must refresh before it sends one.
    issuer.lifetime = int(EXPIRY_MARGIN_SECONDS) - 10
    async with opened(data_dir) as platform:
        await connect_remote(platform, url, seen)
        seen.append(await multiply(platform, 6, 7))
        assert seen[-1].text == "product=42"
        first = await stored(platform)
    assert issuer.refreshes == 0
    # Received at most a few seconds ago, it expires within the lifetime.
    assert time.time() < first["expiresAt"] <= time.time() + issuer.lifetime
    issuer.revoke_access_tokens()  # an old token sent anyway would be refused and counted

    async with opened(data_dir) as platform:
        again = await multiply(platform, 2, 3)
        seen.append(again)
        assert not again.is_error and again.text == "product=6", again.text
        now = await stored(platform)
    assert issuer.authorize_calls == 1 and issuer.refreshes == 1
    assert issuer.refused_tokens == 0  # refreshed before sending, not after a 401
    # The rotated refresh token replaced the spent one; the new expiry is stored with it.
    assert now["tokens"]["refresh_token"] != first["tokens"]["refresh_token"]
    assert now["tokens"]["refresh_token"] in issuer.refresh
    assert now["tokens"]["access_token"] in issuer.tokens
    assert now["expiresAt"] >= first["expiresAt"]
    assert_never_shown(issuer, seen, caplog, data_dir)


async def test_a_revoked_token_is_refreshed_once_and_the_call_retried(
    data_dir: Path, remote: tuple[str, Issuer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url, issuer = remote
    seen: list[ToolResult] = []
    async with opened(data_dir) as platform:
        await connect_remote(platform, url, seen)
        issuer.revoke_access_tokens()
        # Three calls at once all meet the 401; one refresh serves them all.
        products = await asyncio.gather(*(multiply(platform, 3, n) for n in (5, 6, 7)))
        seen += products
        assert [p.text for p in products] == ["product=15", "product=18", "product=21"]
        assert issuer.refreshes == 1 and 1 <= issuer.refused_tokens <= 3
        assert (await stored(platform))["tokens"]["access_token"] in issuer.tokens
        # Revoked at a restart too (the stored expiry still says valid): 401, refresh, retry.
    issuer.revoke_access_tokens()
    async with opened(data_dir) as platform:
        again = await multiply(platform, 4, 5)
        seen.append(again)
        assert again.text == "product=20", again.text
    assert issuer.refreshes == 2 and issuer.authorize_calls == 1
    assert_never_shown(issuer, seen, caplog, data_dir)


async def test_a_refused_refresh_asks_a_person_to_authorize_again(
    data_dir: Path, remote: tuple[str, Issuer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url, issuer = remote
    seen: list[ToolResult] = []
    async with opened(data_dir) as platform:
        await connect_remote(platform, url, seen)
        connection = servers(platform).connection("remote")
        assert connection is not None
        issuer.revoke_access_tokens()
        issuer.revoke_refresh_tokens()

        refused = await multiply(platform, 2, 2)
        seen.append(refused)
        assert refused.is_error and refused.error_code == "mcp_needs_authorization"
        assert "a person must authorize again" in refused.text, refused.text
        assert "connect authorize" in refused.text
        assert issuer.refused_refreshes == 1

        # The connection is opened again and now waits for a person, saying why.
        async with asyncio.timeout(30):
            await connection.wait_settled(connected_at_least=2)
        assert connection.state == "authorizing"
        listed = await platform.call_tool("connect", {"list": ["mcp"]})
        seen.append(listed)
        [row] = (listed.data or {})["lists"][0]["rows"]
        assert row["state"] == "authorizing"
        assert "a person must authorize again" in row["problem"]
        still = await multiply(platform, 2, 2)
        assert still.error_code == "mcp_needs_authorization"

        await authorize_as_person(platform, seen)
        back = await multiply(platform, 2, 9)
        seen.append(back)
        assert back.text == "product=18", back.text
        assert issuer.authorize_calls == 2
        [row] = ((await platform.call_tool("connect", {"list": ["mcp"]})).data or {})["lists"][0][
            "rows"
        ]
        assert row["state"] == "connected" and "problem" not in row
    assert_never_shown(issuer, seen, caplog, data_dir)


async def test_a_refused_refresh_at_restart_waits_for_a_person_with_the_reason(
    data_dir: Path, remote: tuple[str, Issuer]
) -> None:
    url, issuer = remote
    issuer.lifetime = 1  # expired by the time the platform opens again
    async with opened(data_dir) as platform:
        await connect_remote(platform, url, [])
    issuer.revoke_access_tokens()
    issuer.revoke_refresh_tokens()
    async with opened(data_dir) as platform:
        listed = await platform.call_tool("connect", {"list": ["mcp"]})
        [row] = (listed.data or {})["lists"][0]["rows"]
        assert row["state"] == "authorizing"
        assert "refused to refresh the stored authorization" in row["problem"]
        checked = await platform.call_tool(
            "connect", {"check": [{"kind": "mcp", "name": "remote"}]}
        )
        assert "a person must authorize again" in checked.text, checked.text
    assert issuer.refused_refreshes == 1 and issuer.refused_tokens == 0
