"""Worker threads for sync tool handlers: a cheaper hop than ``asyncio.to_thread``.

``asyncio.to_thread`` goes through the default executor: a ``concurrent.futures.Future``
with its condition variable, a work item, the executor's idle semaphore, and a callback
that chains the finished future to an asyncio one. Here a call is one tuple on a
``SimpleQueue`` that a reused thread takes, and the result comes back with one
``call_soon_threadsafe`` that sets the awaiting future: about half the cost a call
(``bench/dispatch.py`` prints both).

The semantics are ``to_thread``'s: the handler runs in a copy of the caller's context
(contextvars), its exception is raised in the caller, a call cancelled before a thread took
it never runs, and one cancelled while it runs finishes in its thread with its result
dropped. The threads are shared by the whole process (like the default executor), at most
:data:`MAX_THREADS` of them, started when a call finds none idle; a forked child starts
with none.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_THREADS", "HandlerThreads", "run_in_thread"]

T = TypeVar("T")

MAX_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""As many threads as the default executor has: calls beyond them wait their turn."""

_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """Runs on the caller's loop: a caller that was cancelled meanwhile gets nothing."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class HandlerThreads:
    """A pool of reused threads that hand results back to the calling loop."""

    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self._max = max_threads
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a worker thread, awaited."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, contextvars.copy_context(), function, args))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # that thread is taken; a second call starts another
                start = False
            else:
                start = self._threads < self._max
                if start:
                    self._threads += 1
        if start:
            threading.Thread(target=self._work, name="corral-handler", daemon=True).start()
        return await future

    def _work(self) -> None:
        take, run = self._jobs.get, self._run
        while True:
            run(*take())

    def _run(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        context: contextvars.Context,
        function: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        value: Any = None
        error: BaseException | None = None
        ran = not future.done()  # a call cancelled before it started never runs
        if ran:
            try:
                value = context.run(function, *args)
            except BaseException as exc:  # to_thread hands back whatever it raised
                error = exc
        # Idle before the hand-back: the woken loop then never waits on this thread's
        # bookkeeping for the interpreter lock.
        with self._lock:
            self._idle += 1
        if ran:
            try:
                loop.call_soon_threadsafe(_settle, future, value, error)
            except RuntimeError:
                pass  # the caller's loop closed meanwhile: nobody waits for it

    def _forget_threads(self) -> None:
        """In a forked child: the parent's threads do not exist here."""
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0


_THREADS = HandlerThreads()
os.register_at_fork(after_in_child=_THREADS._forget_threads)


async def run_in_thread(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in one of the process's handler threads, awaited."""
    return await _THREADS.run(function, *args)
