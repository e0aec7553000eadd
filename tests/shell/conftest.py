"""Fixtures for shell execution: platforms in each confinement, report sinks, process probes.

Everything runs real processes. ``needs_bwrap`` skips a test only where bubblewrap itself
cannot run (the platform then refuses commands, which ``test_sandbox`` checks separately).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import corral
from corral import Cancellation
from corral.platform import Platform
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
    async with corral.open(data_dir, sandbox="unconfined") as opened:
        await opened.admin.set_live("shell_stop_grace_ms", 200)
        yield opened


def shells(platform: Platform) -> ShellService:
    return platform.services.require(ShellService)


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
