"""Starting a child process whose exit the running loop sees through a pidfd.

On Python 3.11 asyncio learns that a child ended from the policy's child watcher, by
default a ``ThreadedChildWatcher``: one new thread per child, blocked in ``waitpid()``. The
spawning loop waits until that thread has started, and the thread hands the exit back
through the loop's self-pipe, so every command paid a thread start and two more wake-ups,
each a chance to lose the CPU on a busy machine (0.4 ms at the minimum, about 2 ms median
with other work running). Here the loop that spawned the child watches a pidfd of it and
reaps it itself; nothing process-wide changes (no policy, no watcher), so an embedding
application's own loops and watchers are untouched.

The stdlib path is kept where this one does not apply: Python 3.12 and later (whose default
watcher already uses a pidfd), a loop that is not asyncio's selector loop, a policy whose
watcher is not the default threaded one (a SIGCHLD watcher reaps every child itself), or a
kernel without ``pidfd_open``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from asyncio import subprocess as aio_subprocess
from collections.abc import Sequence
from typing import Any

__all__ = ["exec_child", "pidfd_watched"]

_LIMIT = 2**16
"""The stream readers' buffer limit: asyncio's default for subprocess pipes."""


@functools.cache
def _pidfd_works() -> bool:
    """Whether ``pidfd_open`` works here (a container's seccomp filter may refuse it)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def pidfd_watched(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether a child spawned on ``loop`` is watched through a pidfd by :func:`exec_child`."""
    if sys.version_info >= (3, 12) or not _pidfd_works():
        return False
    from asyncio import unix_events

    if not isinstance(loop, unix_events._UnixSelectorEventLoop):
        return False
    watcher = asyncio.get_child_watcher()
    return type(watcher) is asyncio.ThreadedChildWatcher


def _reap(pid: int, proc: Any) -> int:
    """The exit code of ``pid``, which has ended; reaped here unless it already was."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # Popen.poll() (a close() that kills) reaped it first
        code: int | None = proc.returncode
        return 255 if code is None else code
    return os.waitstatus_to_exitcode(status)


async def exec_child(
    argv: Sequence[str], *, stdin: int, stdout: int, stderr: int, **popen: Any
) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(*argv, ...)``, its exit seen through a pidfd."""
    loop = asyncio.get_running_loop()
    if not pidfd_watched(loop):
        return await asyncio.create_subprocess_exec(
            *argv, stdin=stdin, stdout=stdout, stderr=stderr, **popen
        )
    from asyncio import unix_events

    protocol = aio_subprocess.SubprocessStreamProtocol(limit=_LIMIT, loop=loop)
    waiter = loop.create_future()
    transport = unix_events._UnixSubprocessTransport(  # type: ignore[attr-defined]
        loop, protocol, list(argv), False, stdin, stdout, stderr, 0, waiter=waiter, **popen
    )
    pid = transport.get_pid()
    try:
        pidfd = os.pidfd_open(pid)  # the child is not reaped before this: it is ours alone
    except OSError:  # out of descriptors: the policy's watcher thread, as the stdlib does
        asyncio.get_child_watcher().add_child_handler(
            pid, lambda _pid, code: transport._process_exited(code)
        )
    else:

        def exited() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            transport._process_exited(_reap(pid, transport._proc))

        loop.add_reader(pidfd, exited)
    try:
        await waiter
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException:
        transport.close()
        await transport._wait()
        raise
    return aio_subprocess.Process(transport, protocol, loop)
