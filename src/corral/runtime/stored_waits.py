"""Waiting for runs that other processes advance: one query for every waiter at once.

On a cluster a run advances on whichever worker took its job, so this process learns that
it settled only from the store. Waiters register here; a single task reads the statuses of
every awaited run in one query, more often while runs are young, and wakes the waiters of
those that settled. A thousand waiting chats cost one query per pause, not a thousand. On
PostgreSQL a worker's notification of a run's status (:mod:`corral.runtime.cluster.live_events`)
has the reader look at once (:meth:`StoredWaits.nudge`); the pauses stay as the safety net.
A read the database refuses for a while (a lost connection, "too many clients") is tried
again after the longest pause: the runs go on elsewhere, so the waiters keep waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Set

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import runtime_tables as rt_tables
from corral.store.outages import database_unavailable

__all__ = ["MAX_PAUSE_SECONDS", "StoredWaits"]

log = logging.getLogger("corral.runtime")

MAX_PAUSE_SECONDS = 0.2
"""The longest pause between two reads of the awaited runs."""


class StoredWaits:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], settled: Set[str]) -> None:
        self._sessions = sessions
        self._settled = settled
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._nudged = asyncio.Event()
        self.first_pause = 0.01
        self.max_pause = MAX_PAUSE_SECONDS
        """The pauses between reads start at ``first_pause`` and double up to this."""

    def nudge(self, run_id: str) -> None:
        """Another process says ``run_id`` changed status: read the store now."""
        if run_id in self._waiting:
            self._nudged.set()

    async def wait(self, run_id: str) -> None:
        """Return once the store shows ``run_id`` settled (or gone)."""
        future = self._waiting.get(run_id)
        if future is None or future.done():
            future = self._waiting[run_id] = asyncio.get_running_loop().create_future()
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll(), name="corral-stored-waits")
        await asyncio.shield(future)

    async def _poll(self) -> None:
        try:
            await self._read_until_all_settled()
        except Exception as exc:  # the store failed: every waiter hears it, none hangs
            waiting, self._waiting = self._waiting, {}
            for future in waiting.values():
                if not future.done():
                    future.set_exception(exc)

    async def _read_until_all_settled(self) -> None:
        pause = self.first_pause
        while self._waiting:
            run_ids = list(self._waiting)
            try:
                found = await self._statuses(run_ids)
            except Exception as exc:
                if not database_unavailable(exc):
                    raise
                log.warning(
                    "waiting for runs: the database is out of reach (%s); reading again", exc
                )
                await self._pause(self.max_pause)
                continue
            for run_id in run_ids:
                status = found.get(run_id)
                if status is None or status in self._settled:
                    future = self._waiting.pop(run_id)
                    if not future.done():
                        future.set_result(None)
            await self._pause(pause)
            pause = min(pause * 2, self.max_pause)

    async def _statuses(self, run_ids: list[str]) -> dict[str, str]:
        r = rt_tables.Run
        async with self._sessions() as session:
            return dict(
                (await session.execute(select(r.id, r.status).where(r.id.in_(run_ids)))).all()
            )

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._nudged.wait(), seconds)
        except TimeoutError:
            pass
        self._nudged.clear()
