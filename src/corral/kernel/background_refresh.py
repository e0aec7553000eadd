"""One re-read of an in-memory cache at a time, off the request path.

A cache past its recheck interval keeps answering with what it holds while one task re-reads
(stale-while-revalidate): under load, a re-read awaited by the requests themselves held every
request in flight for the length of a database round trip once a second (the p99 of tool calls
over HTTP). A failed re-read is logged and left for the next expiry; it never reaches a request.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable

__all__ = ["BackgroundRefresh"]

log = logging.getLogger("corral.kernel")


class BackgroundRefresh:
    def __init__(self, what: str) -> None:
        self._what = what
        self._task: asyncio.Task[None] | None = None

    def start(self, refresh: Callable[[], Awaitable[None]]) -> None:
        """Run ``refresh`` in a task of its own unless one still runs on this event loop."""
        loop = asyncio.get_running_loop()
        if self._running(loop):
            return
        # A context of its own: the task outlives the request that happened to start it.
        self._task = loop.create_task(
            self._run(refresh), name=f"re-read {self._what}", context=contextvars.Context()
        )

    async def settle(self) -> None:
        """Wait for the re-read in flight, if any (before the store closes)."""
        task = self._task
        if task is not None and self._running(asyncio.get_running_loop()):
            await task

    def _running(self, loop: asyncio.AbstractEventLoop) -> bool:
        # A task of a loop that has gone (another asyncio.run) will never finish: ignore it.
        task = self._task
        return task is not None and not task.done() and task.get_loop() is loop

    async def _run(self, refresh: Callable[[], Awaitable[None]]) -> None:
        try:
            await refresh()
        except Exception:
            log.warning(
                "could not re-read %s; the copy in memory serves until the next try",
                self._what,
                exc_info=True,
            )
