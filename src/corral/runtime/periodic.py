"""A background task that runs a process's periodic passes (a sweep, a scheduler tick)
every few seconds until closed; a pass that fails is logged and the loop goes on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

__all__ = ["Periodic"]

Pass = tuple[str, Callable[[], Awaitable[object]]]
"""What the pass is (for the log: "NAME failed") and the pass itself."""


class Periodic:
    def __init__(self, passes: Sequence[Pass], *, interval: float, log: logging.Logger) -> None:
        self._passes = tuple(passes)
        self._interval = interval
        self._log = log
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            for name, run in self._passes:
                try:
                    await run()
                except Exception:  # one bad pass must not end the loop
                    self._log.exception("%s failed", name)
            await asyncio.sleep(self._interval)
