"""Fixtures for shell execution: platforms in each confinement, report sinks, process probes.

Everything runs real processes. ``needs_bwrap`` skips a test only where bubblewrap itself
cannot run (the platform then refuses commands, which ``test_sandbox`` checks separately).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import corral
from corral import Cancellation
from corral.platform import Platform
from corral.runtime.hooks import HookRunner
from corral.shell.egress.helpers import HelperNetwork
from corral.shell.processes import is_gone
from corral.shell.service import ShellService


def _bwrap_works() -> bool:
    binary = shutil.which("bwrap")
    if binary is None:
        return False
    argv = [binary, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/lib", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
    done = subprocess.run([*argv, "--", "/usr/bin/true"], capture_output=True, check=False)
    return done.returncode == 0


BWRAP = _bwrap_works()
needs_bwrap = pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run on this machine")


class FakeReports:
    """A report sink (the runtime's role) that records what it was given."""

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    async def queue_report(self, **report: Any) -> None:
        self.reports.append(report)
        self.arrived.set()


class AllowReaders:
    """Conversation access (the runtime's role): these user ids may read everything."""

    def __init__(self, *user_ids: str) -> None:
        self.user_ids = set(user_ids)

    async def can_read(self, conversation_id: str, caller: Any) -> bool:
        return caller.user_id in self.user_ids


@pytest.fixture
def drive(data_dir: Path) -> Path:
    return data_dir / "drive"


@pytest.fixture
async def fast(platform: Platform) -> Platform:
    """The default platform with a short stop grace, so forced kills do not dawdle."""
    await platform.admin.set_live("shell_stop_grace_ms", 200)
    return platform


@pytest.fixture
async def unconfined(data_dir: Path) -> AsyncIterator[Platform]:
    # The operator's allowlist for code the analysis cannot read: the tests' own daemon.
    allowed = [["python3", "daemon.py", "..."]]
    async with corral.open(
        data_dir, sandbox="unconfined", unconfined_allowed_commands=allowed
    ) as opened:
        await opened.admin.set_live("shell_stop_grace_ms", 200)
        yield opened


def shells(platform: Platform) -> ShellService:
    return platform.services.require(ShellService)


def egress_hook_runner(platform: Platform, folder: Path, uid: int) -> HookRunner:
    """A command-hook runner in ``folder`` whose network is the platform's egress policy for
    helpers, as the platform's own hooks get it."""
    service = shells(platform)

    async def network(conversation_id: str | None) -> HelperNetwork | None:
        return await service.helper_network(conversation_id=conversation_id)

    return HookRunner(project_dir=folder, sandbox_uid=uid, network=network)


def host_pids(token: str) -> list[int]:
    """Live processes (host pid namespace) whose command line contains ``token``."""
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if token in cmdline and not is_gone(int(name)):
            found.append(int(name))
    return found


def dead(pid: int) -> bool:
    """``os.kill(pid, 0)`` fails, or the pid is a zombie nobody reaped yet (it runs no more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return is_gone(pid)


def stop_when(marker: str, cancellation: Cancellation) -> Callable[[str, str], None]:
    """A live-output sink that presses Stop once ``marker`` has been printed."""
    seen: list[str] = []

    def sink(stream: str, text: str) -> None:
        seen.append(text)
        if marker in "".join(seen[-3:]):
            cancellation.cancel()

    return sink


DAEMON = """\
import os, sys, time
token = sys.argv[1]
ready_read, ready_write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open('/dev/null', os.O_RDWR)
        if sys.argv[2] == 'quiet':
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
        os.write(ready_write, b'up')
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', token])
    os._exit(0)
os.read(ready_read, 2)
print('daemon up', flush=True)
if sys.argv[3] == 'stay':
    time.sleep(60)
"""
"""A ``python3 daemon.py TOKEN quiet|loud stay|leave`` script: a double-forked ``setsid``
daemon with TOKEN on its command line (holding stdout when ``loud``), whose starter
waits for it, says ``daemon up`` and then stays or leaves."""


@pytest.fixture
def reaper() -> Iterator[list[str]]:
    """Tokens of processes a test may leave behind on the old code: killed afterwards."""
    tokens: list[str] = []
    yield tokens
    for token in tokens:
        for pid in host_pids(token):
            os.kill(pid, signal.SIGKILL)
