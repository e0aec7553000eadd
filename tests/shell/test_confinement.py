"""Benign probes under every kernel tier this machine has: what analysis cannot see, the
kernel stops.

Each probe is a Python file the test writes into the command's own source, so the command
text is only ``python3 probe.py``: neither command analysis nor the URI gate can see the
path or the call it makes, and only the tier stands in the way. Each refusal has a control
that succeeds where the boundary allows. Under Landlock, as root, the command runs as the
sandbox uid; the work folders live outside pytest's private (0700) tree and are owned by
that uid, so Unix permissions allow what the probes try and the refusals are Landlock's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral.errors import ToolError
from corral.platform import Platform
from corral.shell.confinement import Confiner, SandboxStatus
from corral.shell.landlock import landlock_abi
from corral.shell.sandbox import SandboxFiles
from tests.shell.conftest import BWRAP, shells

UID = 65534
LANDLOCK = landlock_abi()
TIERS = [
    pytest.param(
        "bubblewrap", marks=pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")
    ),
    pytest.param(
        "landlock", marks=pytest.mark.skipif(LANDLOCK == 0, reason="no Landlock in this kernel")
    ),
]
_PROBE = """\
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def outcome(call):
    try:
        result = call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok:" + str(result)
def raw(number, *args):
    wide = [ctypes.c_long(a) for a in args]
    if libc.syscall(ctypes.c_long(number), *wide) == -1:
        return errno.errorcode[ctypes.get_errno()]
    return "ok"
"""


def _world_folder(prefix: str, *, owner: int | None = None) -> Path:
    """A folder under /tmp every user may enter (pytest's own tree is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    if owner is not None and os.geteuid() == 0:
        os.chown(folder, owner, owner)
    return folder


@pytest.fixture
async def world() -> AsyncIterator[Path]:
    root = _world_folder("corral-tier-")
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=TIERS)
async def tier(request: pytest.FixtureRequest, world: Path) -> AsyncIterator[tuple[Platform, Path]]:
    """A platform whose commands get ``request.param``, and its ``work`` source (rwx)."""
    async with corral.open(world / "data", sandbox=request.param) as platform:
        status = shells(platform).status
        assert status.tier == request.param, status.to_json()
        work = world / "work"
        work.mkdir()
        # Writable for both tiers' host identities: bubblewrap's uid maps to the platform's
        # own on the host, Landlock's (as root) is the sandbox uid itself.
        work.chmod(0o777)
        if os.geteuid() == 0:
            os.chown(work, UID, UID)
        await platform.admin.add_source("work", str(work))
        await platform.admin.grant_source(
            "work", principal_kind="role", principal="owner", rights="rwx"
        )
        yield platform, work


async def probe(platform: Platform, work: Path, body: str, name: str = "probe.py") -> str:
    """Run ``body`` (after the probe helpers) as ``python3 name`` in the work source."""
    script = work / name
    script.write_text(_PROBE + body)
    script.chmod(0o644)
    result = await platform.call_tool("execute", {"command": f"python3 {name}", "cwd": "work://"})
    assert result.error_code in (None, "exited"), result.text
    assert result.data is not None
    assert result.data["confinement"] == shells(platform).status.tier
    return result.text


def _secret(folder: Path, text: str) -> Path:
    """A world-readable file in a world-readable folder outside every source."""
    folder.mkdir(mode=0o755, exist_ok=True)
    secret = folder / "key.txt"
    secret.write_text(text)
    secret.chmod(0o644)
    return secret


async def test_a_file_outside_the_sources_is_unreadable_by_any_spelling(
    tier: tuple[Platform, Path], world: Path
) -> None:
    platform, work = tier
    secret = _secret(world / "vault", "the vault key")
    (work / "inside.txt").write_text("inside the source")
    (work / "link").symlink_to(secret)
    relative = "../vault/key.txt"  # work and vault are siblings
    spellings = [
        str(secret),
        relative,
        f"/proc/self/root{secret}",
        f"/proc/self/cwd/{relative}",
        "link",
        f"{work}/../vault/./key.txt",
        f"/proc/{os.getpid()}/root{secret}",  # through the platform's own process
    ]
    body = f"for path in {spellings!r}:\n"
    body += "    print(path, '->', outcome(lambda: open(path).read()))\n"
    body += "print('control', outcome(lambda: open('inside.txt').read()))\n"
    # The next evasions: a hard link or a rename into the source, a metadata change that
    # Landlock does not cover (chmod), and reaching the file by handle.
    body += f"print('hardlink', outcome(lambda: os.link({str(secret)!r}, 'hard')))\n"
    body += f"print('rename', outcome(lambda: os.rename({str(secret)!r}, 'moved')))\n"
    body += f"print('chmod', outcome(lambda: os.chmod({str(secret)!r}, 0o600)))\n"
    text = await probe(platform, work, body)
    assert "the vault key" not in text
    # Landlock does not cover chmod: only the uid switch (as root) keeps the owner's right
    # to change modes away from the command; bubblewrap does not show the file at all.
    owner_only = shells(platform).status.tier == "landlock" and os.geteuid() != 0
    for evasion in ("hardlink", "rename") if owner_only else ("hardlink", "rename", "chmod"):
        row = next(r for r in text.splitlines() if r.startswith(f"{evasion} "))
        assert " ok" not in row, row
    assert secret.read_text() == "the vault key"
    assert owner_only or secret.stat().st_mode & 0o777 == 0o644
    for spelling in spellings:
        line = next(row for row in text.splitlines() if row.startswith(f"{spelling} ->"))
        assert line.endswith(("ENOENT", "EACCES")), line
    assert "control ok:inside the source" in text


async def test_the_platform_database_is_unreadable_even_under_a_covering_source(
    tier: tuple[Platform, Path], world: Path
) -> None:
    platform, work = tier
    # A careless administrator registers a source over the data folder's parent.
    await platform.admin.add_source("everything", str(world))
    await platform.admin.grant_source(
        "everything", principal_kind="role", principal="owner", rights="rx"
    )
    data = world / "data"
    beside = _secret(world / "beside", "beside the data folder")
    os.chmod(data / "corral.db", 0o644)  # Unix permissions alone would let anyone read it
    targets = [str(data / "corral.db"), str(data / "private"), str(beside)]
    body = f"for path in {targets!r}:\n"
    body += "    print(path, '->', outcome(lambda: open(path, 'rb').read(16)))\n"
    text = await probe(platform, work, body)
    assert "SQLite" not in text
    rows = dict(row.split(" -> ") for row in text.splitlines() if " -> " in row)
    assert rows[str(data / "corral.db")] in ("ENOENT", "EACCES")
    assert rows[str(data / "private")] in ("ENOENT", "EACCES", "EISDIR")
    assert rows[str(beside)].startswith("ok:")


async def test_no_network_unless_policy_grants_it(tier: tuple[Platform, Path]) -> None:
    platform, work = tier
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("accepted")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    body = (
        "print('tcp', outcome(lambda: socket.create_connection(('127.0.0.1', "
        f"{port}), timeout=5).close()))\n"
    )
    async with server:
        blocked = await probe(platform, work, body)
        assert "tcp ok" not in blocked and connections == []
        await platform.admin.set_live("shell_network", True)
        allowed = await probe(platform, work, body)
        assert "tcp ok" in allowed and connections == ["accepted"]


async def test_a_unix_socket_outside_the_sources_is_unreachable(
    tier: tuple[Platform, Path], world: Path
) -> None:
    platform, work = tier
    path = world / "daemon.sock"
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("accepted")
        writer.close()

    server = await asyncio.start_unix_server(accept, str(path))
    path.chmod(0o777)
    body = (
        "def go():\n    s = socket.socket(socket.AF_UNIX)\n"
        f"    s.connect({str(path)!r})\n    s.close()\n"
        "print('unix', outcome(go))\n"
    )
    async with server:
        text = await probe(platform, work, body)
    assert "unix ok" not in text and connections == []


async def test_seccomp_refuses_namespaces_ptrace_and_terminal_injection(
    tier: tuple[Platform, Path],
) -> None:
    platform, work = tier
    body = """\
nr = {'x86_64': dict(unshare=272, ptrace=101, ioctl=16, clone3=435, personality=135,
                     keyctl=250, bpf=321),
      'aarch64': dict(unshare=97, ptrace=117, ioctl=29, clone3=435, personality=92,
                      keyctl=219, bpf=280)}[os.uname().machine]
print('unshare', raw(nr['unshare'], 0x10000000))
print('ptrace', raw(nr['ptrace'], 0, 0, 0, 0))
print('tiocsti', raw(nr['ioctl'], 0, 0x100005412, 0))
print('clone3', raw(nr['clone3'], 0, 0))
print('personality', raw(nr['personality'], 0x0040000))
print('keyctl', raw(nr['keyctl'], 0, 0, 0, 0, 0))
print('bpf', raw(nr['bpf'], 0, 0, 0))
print('io_uring', raw(425, 1, 0))
print('control', raw(nr['personality'], 0xFFFFFFFF))
"""
    text = await probe(platform, work, body)
    rows = dict(row.split(" ", 1) for row in text.splitlines() if " " in row)
    assert rows["unshare"] == "EPERM"
    assert rows["ptrace"] == "EPERM"
    assert rows["tiocsti"] == "EPERM"  # not ENOTTY: the filter answered, high bits and all
    assert rows["clone3"] == "ENOSYS"
    assert rows["personality"] == "EPERM"
    assert rows["keyctl"] == "EPERM" and rows["bpf"] == "EPERM"
    assert rows["io_uring"] == "EPERM"  # its operations would bypass the filter
    assert rows["control"] == "ok"


async def test_the_command_runs_as_an_unprivileged_uid_and_can_write_its_source(
    tier: tuple[Platform, Path],
) -> None:
    platform, work = tier
    body = """\
print('uid', os.getuid(), os.geteuid(), os.getgid(), os.getgroups())
print('write', outcome(lambda: open('made.txt', 'w').write('made')))
"""
    text = await probe(platform, work, body)
    uid_row = next(row for row in text.splitlines() if row.startswith("uid "))
    expected = UID if os.geteuid() == 0 else os.getuid()
    assert uid_row.split()[1:3] == [str(expected), str(expected)]
    assert "write ok:4" in text and (work / "made.txt").read_text() == "made"


async def test_a_read_only_source_is_read_only_in_the_kernel(
    tier: tuple[Platform, Path], world: Path
) -> None:
    platform, work = tier
    docs = _world_folder("corral-docs-", owner=UID)
    try:
        (docs / "readme.txt").write_text("docs")
        (docs / "readme.txt").chmod(0o666)  # Unix permissions would allow the write
        await platform.admin.add_source("docs", str(docs))
        await platform.admin.grant_source(
            "docs", principal_kind="role", principal="owner", rights="r"
        )
        body = f"""\
print('read', outcome(lambda: open({str(docs / "readme.txt")!r}).read()))
print('write', outcome(lambda: open({str(docs / "readme.txt")!r}, 'a').write('x')))
print('create', outcome(lambda: open({str(docs / "new.txt")!r}, 'w').write('x')))
"""
        text = await probe(platform, work, body)
        assert "read ok:docs" in text
        assert "write ok" not in text and "create ok" not in text
        assert (docs / "readme.txt").read_text() == "docs" and not (docs / "new.txt").exists()
    finally:
        shutil.rmtree(docs, ignore_errors=True)


async def test_processes_outside_the_sandbox_cannot_be_signalled(
    tier: tuple[Platform, Path],
) -> None:
    platform, work = tier
    me = os.getpid()
    text = await probe(platform, work, f"print('kill', outcome(lambda: os.kill({me}, 0)))\n")
    assert "kill ok" not in text  # ESRCH in bubblewrap's PID namespace, EPERM under Landlock


@pytest.mark.skipif(LANDLOCK == 0, reason="no Landlock in this kernel")
async def test_auto_falls_back_to_landlock_when_bubblewrap_cannot_run(world: Path) -> None:
    async with corral.open(world / "data", bwrap_path="/nonexistent/bwrap") as platform:
        status = shells(platform).status
        assert status.mode == "auto" and status.tier == "landlock"
        assert status.checks[0].tier == "bubblewrap" and not status.checks[0].works
        result = await platform.call_tool("execute", {"command": "echo hi"})
        assert result.data is not None and result.data["confinement"] == "landlock"
        assert "confinement landlock" in result.text and result.text.startswith("hi\n")


def test_no_working_tier_never_falls_back_to_running_bare(tmp_path: Path) -> None:
    status = SandboxStatus(mode="bubblewrap", tier=None, reason="bubblewrap: broken")
    confiner = Confiner(
        status=status,
        files=SandboxFiles.write(tmp_path / "sandbox", uid=UID),
        data_dir=str(tmp_path / "data"),
        protected=(),
        sandbox_uid=UID,
    )
    with pytest.raises(ToolError) as refused:
        confiner.command(
            ["/bin/true"], cwd=str(tmp_path), sources=(), network=False, call_env={}, declared={}
        )
    assert refused.value.code == "sandbox_unavailable"
    assert 'sandbox = "unconfined"' in str(refused.value)


ATTACKS = Path(__file__).parent / "attacks"
HOST_SETUID = next(
    (p for p in ("/usr/bin/passwd", "/usr/bin/gpasswd", "/usr/bin/su") if os.path.isfile(p)),
    "/usr/bin/gpasswd",
)


async def test_no_command_leaves_a_set_id_or_root_owned_file_on_the_host(
    tier: tuple[Platform, Path],
) -> None:
    platform, work = tier
    script = work / "set_id_files.py"
    shutil.copyfile(ATTACKS / "set_id_files.py", script)
    script.chmod(0o644)
    result = await platform.call_tool(
        "execute", {"command": f"python3 set_id_files.py {HOST_SETUID}", "cwd": "work://"}
    )
    assert result.data is not None and result.data["confinement"] == shells(platform).status.tier
    rows = dict(row.split(" ", 1) for row in result.text.splitlines() if " " in row)
    assert len([name for name in rows if "_" in name]) >= 16, result.text
    # Judged on the host inodes: nothing set-id, no device, nothing owned by root.
    bad = []
    for folder, dirs, files in os.walk(work):
        for name in [*dirs, *files]:
            info = os.lstat(os.path.join(folder, name))
            if info.st_mode & 0o6000 or stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
                bad.append(f"{name} {stat.filemode(info.st_mode)}")
            if os.geteuid() == 0 and info.st_uid == 0 and name != "set_id_files.py":
                bad.append(f"{name} owned by root")
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                bad.append(f"{name} is a hard link")
            if _has_capability(os.path.join(folder, name)):
                bad.append(f"{name} has file capabilities")
    assert bad == [], (bad, result.text)
    # The refusals are the filter's and the kernel's, each named (the rows say which).
    for name in ("cp_chmod_4755", "chmod_u+s", "install_m_4755", "tar_xp_setuid"):
        assert rows[name].startswith("exit"), (name, rows[name])
    for name in ("os_chmod", "os_fchmod", "open_creat_4755", "mknod_setuid", "setgid_dir"):
        assert rows[name] == "EPERM", (name, rows[name])
    assert rows["openat2_4755"] == "ENOSYS"
    assert rows["mknod_char"] == "EPERM" and rows["hard_link_setuid"] in ("EPERM", "EXDEV")
    assert rows["file_capability"] == "EPERM"
    assert rows["mkdir_2775"] == "EPERM"


def _has_capability(path: str) -> bool:
    try:
        os.getxattr(path, "security.capability", follow_symlinks=False)
    except OSError:
        return False
    return True
