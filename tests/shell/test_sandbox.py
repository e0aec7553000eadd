"""The kernel boundary, with real processes: what analysis cannot see, bubblewrap stops.

Paths in these commands are hidden inside interpreter code (hex-encoded), so neither command
analysis nor the URI-policy gate can see them: only the sandbox stands in the way. Each
refusal has a control showing the same command succeeds where the boundary allows it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import corral
from corral.platform import Platform
from tests.shell.conftest import needs_bwrap, shells

SANDBOX_UID = 65534


def hidden(path: Path | str) -> str:
    """A Python expression for ``path`` that does not contain it literally."""
    return f"bytes.fromhex('{str(path).encode().hex()}').decode()"


def read_cmd(path: Path | str) -> str:
    return f'python3 -c "print(open({hidden(path)}).read())"'


def write_cmd(path: Path | str) -> str:
    return f"python3 -c \"open({hidden(path)}, 'w').write('written')\""


def _real_parts(path: Path) -> tuple[str, ...]:
    return Path(os.path.realpath(path)).parts


def _host_name() -> str:
    return Path("/etc/hostname").read_text().strip()


async def run(platform: Platform, command: str, **args: object) -> corral.ToolResult:
    result = await platform.call_tool("execute", {"command": command, **args})
    assert result.error_code in (None, "exited"), result.text  # it ran; no guard refused it
    return result


@needs_bwrap
async def test_an_interpreter_cannot_read_outside_its_sources(
    fast: Platform, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "key.txt").write_text("the vault key")
    await fast.admin.add_source("vault", str(vault))  # registered, but no rights for anyone
    etc = await run(fast, "python3 -c \"print(open('/etc/hostname').read())\"")
    assert etc.data is not None and etc.data["exit_code"] == 1
    assert "FileNotFoundError" in etc.text and etc.data["confinement"] == "bubblewrap"
    assert "confinement bubblewrap" in etc.text
    secret = await run(fast, read_cmd(vault / "key.txt"))
    assert "FileNotFoundError" in secret.text and "the vault key" not in secret.text


async def test_the_same_reads_succeed_unconfined(data_dir: Path, tmp_path: Path) -> None:
    # Unconfined, analysis refuses code it cannot read (issue 28), so the control needs the
    # operator to allow these interpreter invocations; then nothing stands in the way.
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "key.txt").write_text("the vault key")
    allowed = [["python3", "-c", "..."]]
    async with corral.open(
        data_dir, sandbox="unconfined", unconfined_allowed_commands=allowed
    ) as unconfined:
        secret = await run(unconfined, read_cmd(vault / "key.txt"))
        assert "the vault key" in secret.text
        assert secret.data is not None and secret.data["confinement"] == "unconfined"
        hostname = _host_name()
        etc = await run(unconfined, "python3 -c \"print(open('/etc/hostname').read())\"")
        assert hostname in etc.text


@needs_bwrap
async def test_read_only_sources_are_read_only_in_the_kernel(
    fast: Platform, data_dir: Path
) -> None:
    docs = data_dir.parent / "docs"  # reachable by the sandbox uid, unlike pytest's tree
    docs.mkdir()
    if os.geteuid() == 0:  # commands run as the sandbox uid: a writable source is its own
        os.chown(docs, SANDBOX_UID, SANDBOX_UID)
    await fast.admin.add_source("docs", str(docs))
    await fast.admin.grant_source("docs", principal_kind="role", principal="owner", rights="r")
    blocked = await run(fast, write_cmd(docs / "new.txt"))
    assert "Read-only file system" in blocked.text and not (docs / "new.txt").exists()
    await fast.admin.grant_source("docs", principal_kind="role", principal="owner", rights="rw")
    await run(fast, write_cmd(docs / "new.txt"))
    assert (docs / "new.txt").read_text() == "written"


@needs_bwrap
async def test_the_data_folder_is_hidden_except_the_drive(
    fast: Platform, data_dir: Path, drive: Path
) -> None:
    # A careless administrator registers a source over the whole data folder's parent.
    await fast.admin.add_source("everything", str(data_dir.parent))
    await fast.admin.grant_source(
        "everything", principal_kind="role", principal="owner", rights="rwx"
    )
    (drive / "notes.txt").write_text("drive notes")
    (data_dir.parent / "beside.txt").write_text("beside the data folder")
    database = await run(fast, read_cmd(data_dir / "corral.db"))
    assert "Error" in database.text and "SQLite" not in database.text
    private = await run(fast, f'python3 -c "import os; print(os.listdir({hidden(data_dir)}))"')
    assert "['drive']" in private.text
    notes = await run(fast, read_cmd(drive / "notes.txt"))
    assert "drive notes" in notes.text
    beside = await run(fast, read_cmd(data_dir.parent / "beside.txt"))
    assert "beside the data folder" in beside.text


@needs_bwrap
async def test_no_network_unless_policy_grants_it(fast: Platform) -> None:
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("accepted")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = (
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', "
        f"{port}), timeout=5); print('connected')\""
    )
    async with server:
        blocked = await run(fast, probe)
        assert "connected" not in blocked.text and "Error" in blocked.text
        assert blocked.data is not None and blocked.data["network"] == "off"
        assert connections == []
        await fast.admin.set_live("shell_network", True)
        allowed = await run(fast, probe)
        assert "connected" in allowed.text and connections == ["accepted"]


@needs_bwrap
async def test_the_process_has_no_capabilities_and_its_own_namespaces(
    fast: Platform, data_dir: Path
) -> None:
    result = await run(
        fast,
        "grep CapEff /proc/self/status; echo pid=$$; hostname; cat /etc/passwd; "
        "echo tmp: $(ls -A /tmp)",
    )
    assert "CapEff:\t0000000000000000" in result.text
    assert "pid=2\n" in result.text or "pid=1\n" in result.text  # a fresh PID namespace
    assert "corral-sandbox" in result.text
    assert "daemon:" not in result.text  # the host's accounts are not visible
    assert "corral:x:" in result.text
    # A private /tmp: the sandbox's HOME, plus the way to the drive when it lives in /tmp.
    listed = set(result.text.split("tmp: ")[1].splitlines()[0].split())
    parts = _real_parts(data_dir)
    assert listed == {"home"} | ({parts[2]} if parts[1] == "tmp" else set())


async def test_without_bubblewrap_commands_are_refused_unless_unconfined(data_dir: Path) -> None:
    # The operator insists on bubblewrap, which cannot run: no weaker tier is taken.
    async with corral.open(
        data_dir, bwrap_path="/nonexistent/bwrap", sandbox="bubblewrap"
    ) as broken:
        status = shells(broken).status
        assert not status.available and "/nonexistent/bwrap" in status.reason
        assert status.tier is None
        result = await broken.call_tool("execute", {"command": "echo hi"})
        assert result.error_code == "sandbox_unavailable"
        assert 'sandbox = "unconfined"' in result.text and "hi\n" not in result.text
        background = await broken.call_tool("execute", {"command": "echo hi", "background": True})
        assert background.error_code == "sandbox_unavailable"
    async with corral.open(data_dir, bwrap_path="/nonexistent/bwrap", sandbox="unconfined") as bare:
        result = await bare.call_tool("execute", {"command": "echo hi"})
        assert result.text.startswith("hi\n") and result.data is not None
        assert result.data["confinement"] == "unconfined"
        assert result.data["network"] == "unrestricted (unconfined)"
