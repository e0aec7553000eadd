"""Executing runs as jobs: in this process, as asyncio tasks, with bounded concurrency.

A job is ``advance_run(run_id)``: it loads the run from the store, takes steps, persists
each one and returns when the run finishes, parks or stops. Nothing here knows what a run
is, so the same job function can later run on a distributed engine (procrastinate,
Temporal) with workers on many machines instead of :class:`LocalJobs`.

Jobs settle before they announce. A job stores how its run settled, then hands what
announces it (the status board, the run event, waking the conversation) to
:meth:`JobRunner.after_job`, which calls it once the job has left the runner. Whoever wakes
on the announcement — a chat turn, ``wait_run``, an event reader — finds the job gone:
``pending`` no longer counts it, ``wait(run_id)`` and ``idle()`` no longer wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

__all__ = ["AfterJob", "Job", "JobRunner", "LocalJobs"]

log = logging.getLogger("corral.runtime")

Job = Callable[[str], Awaitable[None]]
"""The job function, called with the id of the run it advances."""

AfterJob = Callable[[], Awaitable[object]]
"""What to do once a run's job has left the runner; its result is ignored."""


class JobRunner(Protocol):
    """Where jobs run: submitted by run id, waited for, and followed by announcements."""

    @property
    def pending(self) -> int:
        """Jobs queued or running in this runner now."""
        ...

    def submit(self, run_id: str) -> None:
        """Advance ``run_id`` soon; a run that is not queued by then is left alone."""
        ...

    def retry_later(self, run_id: str, seconds: float) -> None:
        """Advance ``run_id`` again in ``seconds``: its job met a database outage."""
        ...

    async def after_job(self, run_id: str, then: AfterJob) -> None:
        """Call ``then`` once no job of ``run_id`` is running in this runner.

        At once when none is and nothing given before waits (an exception is logged, not
        raised); otherwise right after the running job has left, in the order given. A job
        of the run still queued behind it does not hold it back.
        """
        ...

    async def wait(self, run_id: str) -> None:
        """Return when no job of ``run_id`` is queued or running in this runner."""
        ...

    async def idle(self) -> None:
        """Return when no job at all is queued or running in this runner."""
        ...

    async def close(self) -> None:
        """Take no more jobs; end the ones still running."""
        ...

    def lending(self) -> AbstractAsyncContextManager[None]:
        """While inside, the calling job's slot counts as free: a job that only waits for
        another run's job (a parent for its foreground subagent) must not starve it."""
        ...

    @property
    def distributed(self) -> bool:
        """True when jobs run in other processes too: runs are then taken over, stopped
        and waited for through the store rather than through this process's memory."""
        ...

    async def worker_gone(self, run_id: str, worker: str | None) -> bool:
        """Whether the worker that was advancing ``run_id`` is known to be gone, so that the
        job advancing it now may take the run over (never in the embedded default)."""
        ...


class LocalJobs:
    """Runs jobs as tasks of this event loop, at most ``limit()`` at a time."""

    def __init__(self, job: Job, limit: Callable[[], Awaitable[int]]) -> None:
        self._job = job
        self._limit = limit
        self._queued: dict[str, int] = {}
        """Jobs per run, queued or running: ``pending``, ``wait`` and ``idle`` count these."""
        self._running: dict[str, int] = {}
        """Jobs per run that hold a slot: ``after_job`` waits for these."""
        self._after: dict[str, list[AfterJob]] = {}
        self._calling: set[str] = set()
        self._changed = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._lent = 0
        """Slots held by jobs that wait for other jobs (see :meth:`lending`)."""

    @property
    def pending(self) -> int:
        return sum(self._queued.values())

    @property
    def distributed(self) -> bool:
        return False

    async def worker_gone(self, run_id: str, worker: str | None) -> bool:
        return False  # one process: start-up recovery ends what a dead process left

    def submit(self, run_id: str) -> None:
        if self._closed:
            return
        _count(self._queued, run_id, +1)
        task = asyncio.create_task(self._run(run_id), name=f"corral-run-{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def retry_later(self, run_id: str, seconds: float) -> None:
        asyncio.get_running_loop().call_later(seconds, self.submit, run_id)

    async def execute(self, run_id: str) -> None:
        """Advance ``run_id`` in the calling task, counted like a submitted job: for an
        engine whose worker picked the job (its own concurrency bounds how many)."""
        _count(self._queued, run_id, +1)
        await self._run(run_id)

    async def after_job(self, run_id: str, then: AfterJob) -> None:
        self._after.setdefault(run_id, []).append(then)
        await self._call_after(run_id)

    async def wait(self, run_id: str) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: run_id not in self._queued)

    async def idle(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._queued)

    @asynccontextmanager
    async def lending(self) -> AsyncIterator[None]:
        # The slot is not taken back on the way out: waiting for it again could deadlock a
        # chain of parents, so the limit may be passed by the lenders until they end.
        async with self._changed:
            self._lent += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            async with self._changed:
                self._lent -= 1

    async def _run(self, run_id: str) -> None:
        holds_slot = False
        try:
            limit = await self._limit()
            async with self._changed:
                await self._changed.wait_for(
                    lambda: sum(self._running.values()) - self._lent < limit
                )
                _count(self._running, run_id, +1)
                holds_slot = True
            await self._job(run_id)
        except Exception:
            log.exception("advancing run %s failed", run_id)
        finally:
            # Leave first, then announce: even a job cancelled at close is announced.
            if holds_slot:
                _count(self._running, run_id, -1)
            _count(self._queued, run_id, -1)
            async with self._changed:
                self._changed.notify_all()
            await self._call_after(run_id)

    async def _call_after(self, run_id: str) -> None:
        """Call what waits for ``run_id``'s job to leave, in order, while none is running.

        One caller at a time per run, so a callback that waits lets no later one overtake it.
        """
        if run_id in self._calling:
            return
        self._calling.add(run_id)
        try:
            waiting = self._after.get(run_id, [])
            while waiting and run_id not in self._running:
                then = waiting.pop(0)
                try:
                    await then()
                except Exception:
                    log.exception("what followed the job of run %s failed", run_id)
            if not waiting:
                self._after.pop(run_id, None)
        finally:
            self._calling.discard(run_id)

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


def _count(counts: dict[str, int], run_id: str, change: int) -> None:
    left = counts.get(run_id, 0) + change
    if left:
        counts[run_id] = left
    else:
        counts.pop(run_id, None)
