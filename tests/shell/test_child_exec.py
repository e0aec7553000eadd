"""A command's exit seen through a pidfd on the spawning loop, not a watcher thread per child.

Real processes throughout: a child held on a pipe the test controls shows which threads exist
while it runs; exit codes, signals and output come back as with the stdlib path.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading

import pytest

from corral.shell.child_exec import exec_child, pidfd_watched
from corral.shell.runner import ProcessSpec, spawn_process

pidfd_only = pytest.mark.skipif(
    sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"),
    reason="Python 3.12 and later watch children through a pidfd themselves",
)


def _held(fd: int) -> ProcessSpec:
    """``bash`` that waits until a line arrives on descriptor ``fd``, then exits 7."""
    return ProcessSpec(
        argv=["/bin/bash", "-c", f"read -r _ <&{fd}; echo out; echo err >&2; exit 7"],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        sandboxed=False,
        pass_fds=(fd,),
    )


def _watcher_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "waitpid-" in t.name]


@pidfd_only
async def test_a_running_command_has_no_watcher_thread() -> None:
    assert pidfd_watched(asyncio.get_running_loop())
    read, write = os.pipe()
    try:
        process = await spawn_process(_held(read))
    finally:
        os.close(read)
    try:
        assert _watcher_threads() == []  # the stdlib path starts "asyncio-waitpid-N" for this child
    finally:
        os.write(write, b"go\n")
        os.close(write)
    out, err = await process.communicate()
    assert (process.returncode, out, err) == (7, b"out\n", b"err\n")


@pidfd_only
async def test_exit_by_signal_and_wait_are_reported_as_before() -> None:
    process = await exec_child(
        ["/bin/bash", "-c", "kill -KILL $$"],
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert await process.wait() == -signal.SIGKILL
    assert process.returncode == -signal.SIGKILL
    stdlib = await asyncio.create_subprocess_exec("/bin/bash", "-c", "kill -KILL $$")
    assert await stdlib.wait() == -signal.SIGKILL


@pidfd_only
def test_a_loop_in_another_thread_watches_its_own_children() -> None:
    """An embedding application's loop runs off the main thread: still no watcher thread."""
    seen: list[object] = []

    async def run() -> None:
        process = await exec_child(
            ["/bin/bash", "-c", "exit 3"],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        seen.append(pidfd_watched(asyncio.get_running_loop()))
        seen.append(await process.wait())

    worker = threading.Thread(target=asyncio.run, args=(run(),))
    worker.start()
    worker.join()
    assert seen == [True, 3]


async def test_a_failed_start_raises_and_leaves_nothing_behind() -> None:
    with pytest.raises(FileNotFoundError):
        await exec_child(
            ["/nonexistent/program"],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    assert _watcher_threads() == []
