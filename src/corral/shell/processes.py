"""Process groups on Linux: who is in one, signalling it, and knowing when a process is gone.

A command runs as the leader of its own session and process group, so one ``killpg``
reaches everything it started that did not leave the group. Inside bubblewrap the command
also has its own PID namespace, whose teardown kills even processes that left the group.
Identity across processes (a CLI stopping a shell the server runs) is a pid plus its start
time, so a recycled pid is never signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

__all__ = [
    "ProcInfo",
    "descendants",
    "group_members",
    "is_gone",
    "kill_group",
    "proc_info",
    "same_process",
    "signal_members",
    "start_time",
    "wait_gone",
]


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    comm: str
    state: str
    ppid: int
    pgrp: int
    start: int


def proc_info(pid: int) -> ProcInfo | None:
    """What ``/proc/<pid>/stat`` says, or None when the process does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    left, right = raw.find("("), raw.rfind(")")
    if left < 0 or right < 0:
        return None
    fields = raw[right + 2 :].split()
    try:
        return ProcInfo(
            pid=pid,
            comm=raw[left + 1 : right],
            state=fields[0],
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            start=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    info = proc_info(pid)
    return info.start if info is not None else None


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie waiting to be reaped)."""
    info = proc_info(pid)
    return info is None or info.state in ("Z", "X", "x")


def same_process(pid: int, start: int | None) -> bool:
    """True when ``pid`` still runs and is the process that started at ``start``."""
    info = proc_info(pid)
    if info is None or info.state in ("Z", "X", "x"):
        return False
    return start is None or info.start == start


def _all_processes() -> list[ProcInfo]:
    out: list[ProcInfo] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = proc_info(int(name))
            if info is not None and info.state not in ("Z", "X", "x"):
                out.append(info)
    return out


def group_members(pgid: int) -> list[ProcInfo]:
    """Live processes whose process group is ``pgid``."""
    return [p for p in _all_processes() if p.pgrp == pgid]


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (children, their children…), found through ``/proc``."""
    children: dict[int, list[int]] = {}
    for info in _all_processes():
        children.setdefault(info.ppid, []).append(info.pid)
    out: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, ()))
    return out


def signal_members(pgid: int, sig: int, *, spare: frozenset[str] = frozenset()) -> int:
    """Send ``sig`` to each member of group ``pgid`` whose command name is not in ``spare``.

    Sparing the sandbox's own processes lets SIGTERM reach the command first: killing
    bubblewrap itself would tear the sandbox down before the command could clean up.
    Returns how many processes were signalled.
    """
    count = 0
    for member in group_members(pgid):
        if member.comm in spare:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member.pid, sig)
            count += 1
    return count


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_gone(pid: int, within: float | None) -> bool:
    """Wait until ``pid`` has exited (any process, not only a child; None: for as long as it
    takes); True if it did. A child is not reaped here: its watcher still collects its code."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:  # pragma: no cover - kernels without pidfd (before 5.3): poll instead
        deadline = None if within is None else time.monotonic() + within
        while not is_gone(pid):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def readable() -> None:
        if not done.done():
            done.set_result(None)

    try:
        loop.add_reader(fd, readable)
        try:
            await asyncio.wait_for(done, within)
        except TimeoutError:
            return is_gone(pid)
        finally:
            loop.remove_reader(fd)
        return True
    finally:
        os.close(fd)
