"""The platform log in the store: perf.slow records and run log lines."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import tables as t

__all__ = ["LogStore"]


class LogStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def write(
        self, kind: str, data: dict[str, Any], *, level: str = "info", run_id: str | None = None
    ) -> None:
        async with self._sessions.begin() as session:
            session.add(
                t.LogRecord(at=time.time(), level=level, kind=kind, run_id=run_id, data=data)
            )

    async def record_slow(
        self, *, tool: str, duration_ms: float, failed: bool, run_id: str | None
    ) -> None:
        await self.write(
            "perf.slow",
            {"tool": tool, "duration_ms": duration_ms, "failed": failed},
            level="warning",
            run_id=run_id,
        )

    async def records(
        self, *, kind: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[t.LogRecord]:
        query = select(t.LogRecord).order_by(t.LogRecord.id.desc()).limit(limit)
        if kind is not None:
            query = query.where(t.LogRecord.kind == kind)
        if run_id is not None:
            query = query.where(t.LogRecord.run_id == run_id)
        async with self._sessions() as session:
            return list(await session.scalars(query))
