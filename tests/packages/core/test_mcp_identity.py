"""Who an MCP stdio server runs as: a real server (written here with the SDK) connected
through connect. As root it is the sandbox uid with no groups; always no_new_privs and the
seccomp filter, so it can make no set-id file; and nothing it writes reaches root."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
from tests.packages.core.conftest import server_python

SANDBOX_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch happens only as root")

_SERVER = """\
import errno, os, socket
from typing import Annotated
from pydantic import Field
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("ident")


@server.tool(
    description="Report who this server runs as and whether it can make a setuid file.",
    annotations=ToolAnnotations(read_only_hint=True),
)
def probe() -> str:
    with open("made", "w"):
        pass
    try:
        os.chmod("made", 0o4755)
        chmod = "allowed"
    except OSError as exc:
        chmod = errno.errorcode[exc.errno]
    status = open("/proc/self/status").read()
    nnp = status.split("NoNewPrivs:")[1].split()[0]
    return f"uid={os.getuid()} groups={os.getgroups()} chmod={chmod} nnp={nnp} home={os.getcwd()}"


@server.tool(
    description="Read one line from a TCP port on the loopback address.",
    annotations=ToolAnnotations(read_only_hint=True),
)
def reach(port: Annotated[int, Field(description="The port.")]) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        return connection.makefile().readline().strip()


if __name__ == "__main__":
    server.run()
"""


def _server(data_dir: Path) -> list[str]:
    """The probe server's command; its script beside the data folder (the sandbox uid may
    pass through that folder, not through pytest's 0700 tree)."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    script = data_dir.parent / "ident_server.py"
    script.write_text(_SERVER)
    return [server_python(), str(script)]


def _add(command: list[str]) -> dict[str, object]:
    return {"add": [{"kind": "mcp", "name": "ident", "command": command}]}


def _probe_fields(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(" "))


async def test_a_server_runs_unprivileged_and_cannot_make_a_setuid_file(
    platform: Platform, data_dir: Path
) -> None:
    added = await platform.call_tool("connect", _add(_server(data_dir)))
    assert not added.is_error, added.text
    probed = await platform.call_tool("ident_probe", {})
    assert not probed.is_error, probed.text
    fields = _probe_fields(probed.text)
    expected = SANDBOX_UID if os.geteuid() == 0 else os.getuid()
    assert fields["uid"] == str(expected)
    if os.geteuid() == 0:
        assert fields["groups"] == "[]"
    assert fields["chmod"] == "EPERM" and fields["nnp"] == "1"
    home = Path(fields["home"])
    assert home == data_dir / "mcp" / "ident"
    assert not os.lstat(home / "made").st_mode & 0o6000
    info = os.lstat(home)
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == expected


@as_root
async def test_the_home_is_the_servers_and_its_log_stays_out_of_reach(
    platform: Platform, data_dir: Path
) -> None:
    await platform.call_tool("connect", _add(_server(data_dir)))
    homes = os.lstat(data_dir / "mcp")
    assert homes.st_uid == 0 and stat.S_IMODE(homes.st_mode) == 0o711
    home = data_dir / "mcp" / "ident"
    assert (os.lstat(home).st_uid, os.lstat(home).st_gid) == (SANDBOX_UID, SANDBOX_UID)
    assert not (home / "stderr.log").exists()  # the platform's root writes go to private/
    assert (data_dir / "private" / "mcp" / "ident" / "stderr.log").exists()


@as_root
async def test_a_module_planted_in_the_home_never_runs_as_root(data_dir: Path) -> None:
    """The launcher starts as root in the server's writable home: Python must not import
    from there (``python -m`` would put the working folder first on sys.path)."""
    command = _server(data_dir)
    async with corral.open(data_dir) as platform:
        assert not (await platform.call_tool("connect", _add(command))).is_error
    marker = data_dir.parent / "hijacked"
    planted = data_dir / "mcp" / "ident" / "corral"
    (planted / "shell").mkdir(parents=True)
    hijack = f"import os\nopen({str(marker)!r}, 'w').write(str(os.getuid()))\n"
    for module in ("__init__.py", "shell/__init__.py", "shell/launcher.py"):
        (planted / module).write_text(hijack)
    (data_dir / "mcp" / "ident" / "sitecustomize.py").write_text(hijack)
    async with corral.open(data_dir) as platform:
        probed = await platform.call_tool("ident_probe", {})
        assert not probed.is_error, probed.text
        assert _probe_fields(probed.text)["uid"] == str(SANDBOX_UID)
    assert not marker.exists()


@as_root
async def test_a_link_where_the_home_should_be_is_refused_not_followed(
    platform: Platform, data_dir: Path
) -> None:
    victim = data_dir.parent / "victim"
    victim.mkdir(mode=0o700)
    (data_dir / "mcp").mkdir(mode=0o711)
    (data_dir / "mcp" / "ident").symlink_to(victim)
    added = await platform.call_tool("connect", _add(_server(data_dir)))
    assert added.is_error and "is not a folder" in added.text, added.text
    assert "Traceback" not in added.text
    info = os.lstat(victim)
    assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700


@as_root
async def test_a_program_the_sandbox_uid_cannot_reach_is_a_clear_error(
    platform: Platform, data_dir: Path
) -> None:
    closed = data_dir.parent / "closed"
    closed.mkdir(mode=0o700)
    program = closed / "server"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    added = await platform.call_tool("connect", _add([str(program)]))
    assert added.is_error, added.text
    assert f"confined as uid {SANDBOX_UID}" in added.text
    assert "readable and executable by that uid" in added.text


async def test_the_launcher_leaves_a_server_its_network(platform: Platform, data_dir: Path) -> None:
    """It confines identity and set-id modes, not sockets: a fetch-like server still works."""

    async def greet(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from loopback\n")
        await writer.drain()
        writer.close()

    # The host's network for helpers, as for shell calls; else the egress policy's (issue 35).
    await platform.admin.set_live("shell_network", True)
    listener = await asyncio.start_server(greet, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        await platform.call_tool("connect", _add(_server(data_dir)))
        reached = await platform.call_tool("ident_reach", {"port": port})
    assert not reached.is_error and reached.text == "hello from loopback", reached.text
