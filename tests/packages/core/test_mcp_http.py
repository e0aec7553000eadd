"""An MCP server over streamable HTTP that wants OAuth (tests/fixtures/mcp_oauth_server.py,
written with the SDK, its own authorization server), connected through connect: authorize
hands a person the URL, our callback route stores the tokens, the next call succeeds and no
token or code shows anywhere the model, the store or the logs could show it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from ipaddress import ip_network
from pathlib import Path

import httpx
import pytest

import corral
from corral.platform import Platform
from corral.server.app import create_app
from corral.tools.results import ToolResult
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from tests.conftest import DEMO
from tests.fixtures.mcp_oauth_server import Issuer, build_app
from tests.server.loopback import bind_loopback, serving

LOOPBACK_ALLOWED = Services(
    web=WebAccess(addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.1/32")))
)


@pytest.fixture
async def remote() -> AsyncIterator[tuple[str, Issuer]]:
    sock, base = bind_loopback()
    issuer = Issuer()
    async with serving(build_app(base, issuer), sock=sock):
        yield f"{base}/mcp", issuer


def add_remote(url: str) -> dict[str, object]:
    return {"add": [{"kind": "mcp", "name": "remote", "url": url}]}


def read_everything(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def every_text(results: list[ToolResult]) -> str:
    return "\n".join(f"{r.text}\n{r.data!r}" for r in results)


async def test_authorize_hands_a_person_the_url_and_the_callback_connects(
    data_dir: Path, remote: tuple[str, Issuer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url, issuer = remote
    sock, base = bind_loopback()
    seen: list[ToolResult] = []
    async with (
        corral.open(
            data_dir, package_paths=[DEMO], public_url=base, services=LOOPBACK_ALLOWED
        ) as platform,
        serving(create_app(platform), sock=sock),
    ):
        added = await platform.call_tool("connect", add_remote(url))
        seen.append(added)
        assert not added.is_error, added.text
        [done] = (added.data or {})["applied"]
        assert done["state"] == "authorizing" and done["transport"] == "http"
        early = await platform.call_tool("connect", {"list": ["mcp"]})
        assert early.data is not None
        assert early.data["lists"][0]["rows"][0]["tools"] == []

        authorized = await platform.call_tool(
            "connect", {"authorize": [{"kind": "mcp", "name": "remote"}]}
        )
        seen.append(authorized)
        [step] = (authorized.data or {})["applied"]
        link = step["handoff"]["url"]
        assert link.startswith(url.removesuffix("/mcp") + "/authorize?")
        assert "code_challenge=" in link and "code_challenge_method=S256" in link
        # The model reads that a person must open it; it is not given the link.
        assert link not in authorized.text and "authorize?" not in authorized.text
        assert "A person must open the authorization link" in authorized.text

        async with httpx.AsyncClient(timeout=30) as person:
            consent = await person.get(link)
            assert consent.status_code in (302, 303, 307), consent.text
            back = consent.headers["location"]
            assert back.startswith(f"{base}/connect/oauth/callback?")
            landed = await person.get(back)
            assert landed.status_code == 200 and "Connected" in landed.text
            replay = await person.get(back)
            assert replay.status_code == 400  # a used state answers nothing

        product = await platform.call_tool("remote_multiply", {"a": 6, "b": 7}, profile="auto")
        seen.append(product)
        assert not product.is_error and product.text == "product=42"
        listed = await platform.call_tool("connect", {"list": ["mcp", "credential"]})
        seen.append(listed)
        assert listed.data is not None
        [row] = listed.data["lists"][0]["rows"]
        assert row["state"] == "connected" and row["tools"] == ["remote_multiply"]
        creds = {r["name"]: r for r in listed.data["lists"][1]["rows"]}
        assert creds["mcp-remote-oauth"]["hasValue"] is True

    # After a restart the stored tokens connect it again: no person, no new authorization.
    async with corral.open(
        data_dir, package_paths=[DEMO], public_url=base, services=LOOPBACK_ALLOWED
    ) as platform:
        again = await platform.call_tool("remote_multiply", {"a": 2, "b": 3}, profile="auto")
        seen.append(again)
        assert again.text == "product=6"
    assert issuer.authorize_calls == 1

    secrets_issued = [s for s in issuer.issued if s]
    assert len(secrets_issued) >= 3
    # Every log line of this process but the test person's own browser stand-in (httpx).
    person = ("httpx", "httpcore")
    ours = [r.getMessage() for r in caplog.records if r.name.split(".")[0] not in person]
    shown = every_text(seen) + "\n".join(ours)
    stored = read_everything(data_dir)
    for secret in secrets_issued:
        assert secret not in shown
        assert secret.encode() not in stored  # tokens are encrypted at rest


async def test_the_default_address_rules_keep_a_loopback_server_out(
    platform: Platform, remote: tuple[str, Issuer]
) -> None:
    url, issuer = remote
    refused = await platform.call_tool("connect", add_remote(url))
    assert refused.is_error and refused.error_code == "partially_applied"
    assert "127.0.0.1" in refused.text and "mcp_unavailable" in refused.text
    assert issuer.clients == {}
    listed = await platform.call_tool("connect", {"list": ["mcp"]})
    assert listed.data is not None and listed.data["lists"][0]["rows"] == []


async def test_private_hosts_and_trust_are_for_admins_and_urls_are_checked(
    platform: Platform,
) -> None:
    await platform.identity.create_role("connector", ["mcp.connect"])
    await platform.identity.create_user("max", "connector")
    bad = await platform.call_tool(
        "connect",
        {"add": [{"kind": "mcp", "name": "x", "url": "file:///etc/passwd"}]},
        user="owner",
    )
    assert bad.error_code == "invalid_arguments" and "http(s) URL" in bad.text
    with_password = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "x", "url": "https://u:p@mcp.example/mcp"}]}
    )
    assert with_password.error_code == "invalid_arguments"
    both = await platform.call_tool(
        "connect",
        {"add": [{"kind": "mcp", "name": "x", "url": "https://a.example/mcp", "command": ["x"]}]},
    )
    assert both.error_code == "invalid_arguments" and "either" in both.text
    private = {"kind": "mcp", "name": "x", "url": "http://10.0.0.5/mcp"}
    member = await platform.call_tool(
        "connect", {"add": [private | {"fields": {"privateHost": "true"}}]}, user="max"
    )
    assert member.error_code == "feature_missing", member.text
    assert "reaching a private host needs feature 'admin.settings'" in member.text
