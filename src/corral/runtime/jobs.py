"""Executing runs as jobs: in this process, as asyncio tasks, with bounded concurrency.

A job is ``advance_run(run_id)``: it loads the run from the store, takes steps, persists
each one and returns when the run finishes, parks or stops. Nothing here knows what a run
is, so the same job function can later run on a distributed engine (procrastinate,
Temporal) with workers on many machines instead of :class:`LocalJobs`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["JobRunner", "LocalJobs"]

log = logging.getLogger("corral.runtime")

Job = Callable[[str], Awaitable[None]]


class JobRunner(Protocol):
    def submit(self, run_id: str) -> None:
        """Advance ``run_id`` soon; a run that is not queued by then is left alone."""
        ...

    async def close(self) -> None: ...


class LocalJobs:
    """Runs jobs as tasks of this event loop, at most ``limit()`` at a time."""

    def __init__(self, job: Job, limit: Callable[[], Awaitable[int]]) -> None:
        self._job = job
        self._limit = limit
        self._running = 0
        self._slots = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def pending(self) -> int:
        return len(self._tasks)

    def submit(self, run_id: str) -> None:
        if self._closed:
            return
        task = asyncio.create_task(self._run(run_id), name=f"corral-run-{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, run_id: str) -> None:
        limit = await self._limit()
        async with self._slots:
            await self._slots.wait_for(lambda: self._running < limit)
            self._running += 1
        try:
            await self._job(run_id)
        except Exception:
            log.exception("advancing run %s failed", run_id)
        finally:
            async with self._slots:
                self._running -= 1
                self._slots.notify_all()

    async def close(self, grace: float = 10.0) -> None:
        """Stop taking jobs and wait up to ``grace`` seconds for running ones to end."""
        self._closed = True
        tasks = set(self._tasks)
        if tasks:
            _, still = await asyncio.wait(tasks, timeout=grace)
            for task in still:
                task.cancel()
            if still:
                await asyncio.gather(*still, return_exceptions=True)
