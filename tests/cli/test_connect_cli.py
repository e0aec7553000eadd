"""`corral connect`: list, check and authorize through the connect tool as the local owner.

Most of it runs in-process through the command's own functions (and typer's runner) against
the SDK's OAuth MCP server on loopback (tests/fixtures/mcp_oauth_server.py); two real
processes show the command line itself: a clear refusal, and a whole authorization with a
person's browser coming back to the command (registered earlier for another public_url)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import corral
from corral.cli.connect import (
    authorize_server,
    bind_callback,
    callback_address,
    check_server,
    list_connections,
)
from corral.cli.main import app
from corral.errors import ToolError, UsageError
from corral.platform import Platform
from tests.cli.processes import corral_cli
from tests.conftest import DEMO
from tests.fixtures.mcp_oauth_server import Issuer, build_app
from tests.packages.core.conftest import MCP_SERVER
from tests.packages.core.test_mcp_http import LOOPBACK_ALLOWED
from tests.server.loopback import bind_loopback, serving


@pytest.fixture
async def remote() -> AsyncIterator[tuple[str, Issuer]]:
    sock, base = bind_loopback()
    issuer = Issuer()
    async with serving(build_app(base, issuer), sock=sock):
        yield f"{base}/mcp", issuer


class Person:
    """Opens the link the command prints, as someone at a browser would."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.pages: list[httpx.Response] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, url: str) -> None:
        self.shown.append(url)
        task = asyncio.get_running_loop().create_task(self._open(url))
        self._tasks.add(task)

    async def _open(self, url: str) -> None:
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as browser:
            self.pages.append(await browser.get(url))


async def test_authorize_prints_the_link_serves_the_callback_and_connects(
    data_dir: Path, remote: tuple[str, Issuer]
) -> None:
    url, issuer = remote
    sock, base = bind_loopback()
    port = sock.getsockname()[1]
    async with corral.open(
        data_dir, package_paths=[DEMO], public_url=base, services=LOOPBACK_ALLOWED
    ) as platform:
        added = await platform.call_tool(
            "connect", {"add": [{"kind": "mcp", "name": "remote", "url": url}]}
        )
        assert not added.is_error, added.text
        person = Person()
        done = await authorize_server(
            platform, "remote", wait_seconds=30, show_url=person, sock=sock
        )
        assert done["outcome"] == "connected" and done["state"] == "connected"
        assert done["tools"] == ["remote_multiply"]
        [link] = person.shown
        assert link.startswith(url.removesuffix("/mcp") + "/authorize?")
        assert "code_challenge=" in link
        [page] = person.pages
        assert page.status_code == 200 and "Connected" in page.text
        # The callback listener is gone once the command is done.
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert json.dumps(done).count("at-") == 0
        for secret in issuer.issued:
            assert secret not in json.dumps(done)

        again = await authorize_server(
            platform, "remote", wait_seconds=30, show_url=person, sock=bind_loopback()[0]
        )
        assert again["outcome"] == "already connected" and len(person.shown) == 1
        checked = await check_server(platform, "remote")
        assert checked["state"] == "connected" and checked["transport"] == "http"
        lists = await list_connections(platform, ["mcp", "credential"])
        assert [row["name"] for row in lists[0]["rows"]] == ["remote"]
        assert {r["name"]: r["hasValue"] for r in lists[1]["rows"]} == {"mcp-remote-oauth": True}
    assert issuer.authorize_calls == 1


async def test_authorize_gives_up_after_its_timeout(
    data_dir: Path, remote: tuple[str, Issuer]
) -> None:
    url, _ = remote
    sock, base = bind_loopback()
    async with corral.open(
        data_dir, package_paths=[DEMO], public_url=base, services=LOOPBACK_ALLOWED
    ) as platform:
        await platform.call_tool(
            "connect", {"add": [{"kind": "mcp", "name": "remote", "url": url}]}
        )
        shown: list[str] = []
        done = await authorize_server(
            platform, "remote", wait_seconds=0.2, show_url=shown.append, sock=sock
        )
        assert done["outcome"] == "timed out" and done["state"] == "authorizing"
        assert len(shown) == 1


async def test_what_cannot_be_authorized_is_refused_clearly(
    platform: Platform,
) -> None:
    def show(url: str) -> None:
        raise AssertionError("no link for this")

    with pytest.raises(UsageError, match="no MCP server named 'ghost' is connected"):
        await authorize_server(platform, "ghost", wait_seconds=1, show_url=show)
    with pytest.raises(UsageError, match="no MCP server named 'ghost'"):
        await check_server(platform, "ghost")
    with pytest.raises(UsageError, match=r"unknown kind\(s\) \['mcps'\]"):
        await list_connections(platform, ["mcps"])
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "local", "command": MCP_SERVER}]}
    )
    assert not added.is_error, added.text
    with pytest.raises(UsageError, match=r"is a local command \(stdio\) and needs no OAuth"):
        await authorize_server(platform, "local", wait_seconds=1, show_url=show)

    assert callback_address(platform) == ("127.0.0.1", platform.settings.port)
    taken, _ = bind_loopback()
    with taken, pytest.raises(UsageError, match="If `corral serve` runs there, authorize through"):
        bind_callback("127.0.0.1", taken.getsockname()[1])


async def test_a_link_no_browser_could_follow_back_is_not_handed_out(
    data_dir: Path, remote: tuple[str, Issuer]
) -> None:
    url, _ = remote
    async with corral.open(
        data_dir, package_paths=[DEMO], host="0.0.0.0", services=LOOPBACK_ALLOWED
    ) as platform:
        added = await platform.call_tool(
            "connect", {"add": [{"kind": "mcp", "name": "remote", "url": url}]}
        )
        assert not added.is_error, added.text
        asked = await platform.call_tool(
            "connect", {"authorize": [{"kind": "mcp", "name": "remote"}]}
        )
        assert asked.is_error and "authorize?" not in asked.text
        assert "Set public_url (CORRAL_PUBLIC_URL" in asked.text
        with pytest.raises(ToolError, match=r"the server binds '0\.0\.0\.0'"):
            await authorize_server(platform, "remote", wait_seconds=1, show_url=print)
    async with corral.open(
        data_dir,
        package_paths=[DEMO],
        host="0.0.0.0",
        public_url="https://corral.example",
        services=LOOPBACK_ALLOWED,
    ) as platform:
        assert callback_address(platform) == ("0.0.0.0", platform.settings.port)


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, "connect", *args)


def test_list_and_check_print_what_the_tool_answers(data_dir: Path) -> None:
    env = {"CORRAL_DATA_DIR": str(data_dir)}
    listed = CliRunner().invoke(app, ["connect", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    kinds = {item["kind"]: item for item in json.loads(listed.stdout)}
    assert set(kinds) == {"mcp", "credential", "source", "git", "channel"}
    assert kinds["mcp"]["rows"] == []
    table = CliRunner().invoke(app, ["connect", "list", "--kind", "source"], env=env)
    assert table.exit_code == 0 and table.stdout.startswith("source: ")
    bad = CliRunner().invoke(app, ["connect", "list", "--kind", "mcps"], env=env)
    assert bad.exit_code == 2 and "unknown kind(s) ['mcps']" in bad.output
    ghost = CliRunner().invoke(app, ["connect", "check", "ghost"], env=env)
    assert ghost.exit_code == 2 and "no MCP server named 'ghost'" in ghost.output


def test_unknown_names_are_clear_errors_without_a_traceback(data_dir: Path) -> None:
    authorize = run(data_dir, "authorize", "ghost", "--timeout", "5")
    assert authorize.returncode == 2
    assert "no MCP server named 'ghost' is connected" in authorize.stderr
    assert "corral connect list" in authorize.stderr
    assert "Traceback" not in authorize.stderr + authorize.stdout


async def test_authorize_from_the_command_line_waits_for_the_browser(
    data_dir: Path, remote: tuple[str, Issuer]
) -> None:
    url, issuer = remote
    private = {"kind": "mcp", "name": "remote", "url": url, "fields": {"privateHost": "true"}}
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        added = await platform.call_tool("connect", {"add": [private]})
        assert not added.is_error, added.text
    free, base = bind_loopback()
    port = free.getsockname()[1]
    free.close()  # the command binds it again for the callback
    env = {
        **os.environ,
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PUBLIC_URL": base,
        "CORRAL_PORT": str(port),
    }
    command = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "corral", "connect", "authorize", "remote", "--timeout", "60"),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert command.stdout is not None
    try:
        async with asyncio.timeout(120):
            lines = [(await command.stdout.readline()).decode() for _ in range(2)]
            [link] = [line.strip() for line in lines if line.startswith("http")]
            person = Person()
            await person._open(link)
            out, err = await command.communicate()
    except (TimeoutError, ValueError):
        command.kill()
        rest, err = await command.communicate()
        raise AssertionError(f"no link: {rest.decode()} {err.decode()}") from None
    assert command.returncode == 0, err.decode()
    assert "remote: connected (state connected)" in out.decode()
    [page] = person.pages
    assert page.status_code == 200 and "Connected" in page.text
    printed = "".join(lines) + out.decode() + err.decode()
    assert "Traceback" not in printed
    for secret in issuer.issued:
        assert secret not in printed
