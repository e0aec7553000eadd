"""A real stdio MCP server (tests/fixtures/mcp_demo_server.py, written with the SDK) connected
through connect: its tools as the package mcp:demo, called through the one pipeline."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import corral
from corral.cli.main import app
from corral.packages.core.mcp_servers import McpServers
from corral.platform import Platform
from corral.tools.narrowing import Narrowing


def add_demo(command: list[str], *, trusted: bool = False) -> dict[str, object]:
    item: dict[str, object] = {"kind": "mcp", "name": "demo", "command": command}
    if trusted:
        item["fields"] = {"trusted": "true"}
    return {"add": [item], "list": ["mcp"]}


def servers(platform: Platform) -> McpServers:
    return platform.services.require(McpServers)


async def test_a_server_is_connected_listed_and_called_through_the_pipeline(
    platform: Platform, mcp_command: list[str]
) -> None:
    added = await platform.call_tool("connect", add_demo(mcp_command))
    assert not added.is_error, added.text
    [view] = (added.data or {})["lists"][0]["rows"]
    assert view["state"] == "connected" and view["package"] == "mcp:demo"
    assert view["tools"] == ["demo_add", "demo_crash", "demo_env", "demo_note", "demo_vague"]
    assert view["leftOut"] == []  # a server's schema is taken as it is given
    [warning] = view["warnings"]
    assert warning.startswith("vague: no description for /properties/x"), warning
    assert str(Path(mcp_command[1]).parent) not in added.text  # no command or path shown
    visible = {tool.name for tool in await platform.visible_tools()}
    assert {"demo_add", "demo_note", "demo_vague"} <= visible
    assert (await platform.call_tool("demo_vague", {"x": 3})).text == "3"
    result = await platform.call_tool("demo_add", {"a": 2, "b": 40})
    assert not result.is_error and result.text == "sum=42"
    bad = await platform.call_tool("demo_add", {"a": "two"})
    assert bad.error_code == "invalid_arguments"


async def test_an_untrusted_servers_hints_are_not_believed(
    platform: Platform, mcp_command: list[str]
) -> None:
    await platform.call_tool("connect", add_demo(mcp_command))
    parked = await platform.call_tool("demo_add", {"a": 1, "b": 1}, profile="balanced")
    assert parked.error_code == "approval_pending", parked.text
    await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "demo"}]})
    assert "demo_add" not in {t.name for t in await platform.visible_tools()}
    await platform.call_tool("connect", add_demo(mcp_command, trusted=True))
    ran = await platform.call_tool("demo_add", {"a": 1, "b": 1}, profile="balanced")
    assert ran.text == "sum=2"
    destructive = await platform.call_tool("demo_note", {"text": "x"}, profile="balanced")
    assert destructive.error_code == "approval_pending"


async def test_narrowing_hides_a_server_tool(platform: Platform, mcp_command: list[str]) -> None:
    await platform.call_tool("connect", add_demo(mcp_command))
    narrowed = await platform.call_tool(
        "demo_add", {"a": 1, "b": 1}, narrowing=Narrowing(blocked_tools=frozenset({"demo_add"}))
    )
    assert narrowed.error_code == "not_visible"
    await platform.admin.set_custom_tools("default", ["connect"])
    hidden = await platform.call_tool("demo_add", {"a": 1, "b": 1})
    assert hidden.error_code == "not_visible"
    await platform.admin.set_all_tools("default")
    assert (await platform.call_tool("demo_add", {"a": 1, "b": 1})).text == "sum=2"
    await platform.admin.set_package_enabled("mcp:demo", False)
    off = await platform.call_tool("demo_add", {"a": 1, "b": 1})
    assert off.error_code == "not_visible"


async def test_the_server_runs_with_executes_clean_environment(
    platform: Platform, mcp_command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_API_TOKEN", "sk-live-0123456789abcdef0123")
    monkeypatch.setenv("LANG", "C.UTF-8")
    await platform.call_tool("connect", add_demo(mcp_command))
    token = await platform.call_tool("demo_env", {"name": "DEMO_API_TOKEN"})
    assert token.text == "DEMO_API_TOKEN=<unset>"
    lang = await platform.call_tool("demo_env", {"name": "LANG"})
    assert lang.text == "LANG=C.UTF-8"


async def test_a_server_that_dies_mid_call_is_a_clear_error_and_comes_back(
    platform: Platform, mcp_command: list[str]
) -> None:
    await platform.call_tool("connect", add_demo(mcp_command))
    async with asyncio.timeout(30):
        died = await platform.call_tool("demo_crash", {})
    assert died.is_error and died.error_code == "mcp_server_gone", died.text
    assert "stopped while running 'crash'" in died.text
    connection = servers(platform).connection("demo")
    assert connection is not None
    async with asyncio.timeout(30):
        await connection.wait_settled(connected_at_least=2)
    again = await platform.call_tool("demo_add", {"a": 3, "b": 4})
    assert again.text == "sum=7"


async def test_connections_are_restored_when_the_platform_opens(
    data_dir: Path, mcp_command: list[str]
) -> None:
    async with corral.open(data_dir) as platform:
        assert not (await platform.call_tool("connect", add_demo(mcp_command))).is_error
    async with corral.open(data_dir) as platform:
        result = await platform.call_tool("demo_add", {"a": 5, "b": 5})
        assert result.text == "sum=10"
        checked = await platform.call_tool("connect", {"check": [{"kind": "mcp", "name": "demo"}]})
        assert (checked.data or {})["applied"][0]["state"] == "connected"
        await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "demo"}]})
    async with corral.open(data_dir) as platform:
        gone = await platform.call_tool("demo_add", {"a": 5, "b": 5})
        assert gone.error_code == "not_visible"


def test_tools_list_shows_the_server_package(data_dir: Path, mcp_command: list[str]) -> None:
    async def connect() -> None:
        async with corral.open(data_dir) as platform:
            assert not (await platform.call_tool("connect", add_demo(mcp_command))).is_error

    asyncio.run(connect())
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
    listed = subprocess.run(
        [sys.executable, "-m", "corral", "tools", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert "demo_add" in listed.stdout and "mcp:demo" in listed.stdout
    assert "demo_vague" in listed.stdout  # its undescribed argument does not leave it out


@pytest.fixture
def own_copy(data_dir: Path, mcp_command: list[str]) -> Path:
    """A copy of the demo server that a test may break, beside the data folder: a folder
    the sandbox uid may pass through (pytest's own tree is root's 0700)."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    script = data_dir.parent / "server.py"
    script.write_text(Path(mcp_command[1]).read_text())
    return script


def break_server(script: Path) -> None:
    script.write_text("raise SystemExit(3)\n")


async def test_a_stored_server_that_no_longer_starts_is_listed_down_and_removable(
    data_dir: Path, mcp_command: list[str], own_copy: Path
) -> None:
    script = own_copy
    async with corral.open(data_dir) as platform:
        added = await platform.call_tool("connect", add_demo([mcp_command[0], str(script)]))
        assert not added.is_error, added.text
    break_server(script)
    async with corral.open(data_dir) as platform:
        listed = await platform.call_tool("connect", {"list": ["mcp"]})
        [row] = (listed.data or {})["lists"][0]["rows"]
        assert (row["name"], row["state"], row["tools"]) == ("demo", "down", [])
        assert str(script.parent) not in listed.text
        removed = await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "demo"}]})
        assert not removed.is_error, removed.text
    async with corral.open(data_dir) as platform:
        empty = await platform.call_tool("connect", {"list": ["mcp"]})
        assert (empty.data or {})["lists"][0]["rows"] == []


async def test_a_link_left_as_the_servers_log_is_never_followed(
    platform: Platform, data_dir: Path, mcp_command: list[str], tmp_path: Path
) -> None:
    """A stdio server may write in its own folder; a link it leaves as ``stderr.log`` must not
    make the platform create or append to a file elsewhere when it starts the server."""
    outside = tmp_path / "outside"
    outside.mkdir()
    home = data_dir / "private" / "mcp" / "demo"
    home.mkdir(parents=True)
    (home / "stderr.log").symlink_to(outside / "planted")
    added = await platform.call_tool("connect", add_demo(mcp_command))
    assert list(outside.iterdir()) == []
    assert "symbolic link" in added.text and str(home / "stderr.log") in added.text, added.text


def test_connect_check_prints_the_warnings(data_dir: Path, mcp_command: list[str]) -> None:
    async def connect() -> None:
        async with corral.open(data_dir) as platform:
            assert not (await platform.call_tool("connect", add_demo(mcp_command))).is_error

    asyncio.run(connect())
    env = {"CORRAL_DATA_DIR": str(data_dir)}
    checked = CliRunner().invoke(app, ["connect", "check", "demo"], env=env)
    assert checked.exit_code == 0, checked.output
    assert "demo: connected (stdio)" in checked.stdout
    assert "warning: vague: no description for /properties/x" in checked.stdout
