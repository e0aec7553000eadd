"""Appending timeline rows: sequence numbers without a counter row, retried on conflict.

A row's number is one past the conversation's highest; the unique ``(conversation_id,
seq)`` constraint settles races between processes, and a writer that loses one simply
retries with fresh numbers. The hot path — a run appending its own rows while it holds
the conversation — knows the last number already and writes one INSERT per append.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from corral.runtime.timeline import NewRow, TimelineRow
from corral.store import runtime_tables as rt
from corral.store.tables import utcnow

__all__ = ["Appender", "append_rows", "next_seq", "write"]

T = TypeVar("T")
Db = AsyncSession | AsyncConnection
ATTEMPTS = 8


def _retryable(error: Exception) -> bool:
    if isinstance(error, IntegrityError):
        return True
    return isinstance(error, OperationalError) and "locked" in str(error).lower()


async def write(
    sessions: async_sessionmaker[AsyncSession], work: Callable[[AsyncSession], Awaitable[T]]
) -> T:
    """Run ``work`` in a transaction, again in a fresh one when it lost a race."""
    for attempt in range(ATTEMPTS):
        try:
            async with sessions.begin() as session:
                return await work(session)
        except (IntegrityError, OperationalError) as error:
            if attempt == ATTEMPTS - 1 or not _retryable(error):
                raise
    raise AssertionError("unreachable")


async def next_seq(db: Db, conversation_id: str) -> int:
    c = rt.ConversationRow
    last = await db.scalar(select(func.max(c.seq)).where(c.conversation_id == conversation_id))
    return int(last or 0) + 1


def _stored(first: int, rows: Sequence[NewRow], now: datetime) -> list[TimelineRow]:
    return [
        TimelineRow(
            seq=first + i,
            kind=row.kind,
            data=dict(row.data),
            run_id=row.run_id,
            user_id=row.user_id,
            call_id=row.call_id,
            created_at=now,
        )
        for i, row in enumerate(rows)
    ]


async def _insert(db: Db, conversation_id: str, rows: list[TimelineRow]) -> None:
    await db.execute(
        insert(rt.ConversationRow),
        [
            {
                "conversation_id": conversation_id,
                "seq": r.seq,
                "kind": r.kind,
                "run_id": r.run_id,
                "user_id": r.user_id,
                "call_id": r.call_id,
                "data": r.data,
                "created_at": r.created_at,
            }
            for r in rows
        ],
    )


async def append_rows(db: Db, conversation_id: str, rows: Sequence[NewRow]) -> list[TimelineRow]:
    """Append ``rows`` inside the caller's transaction (run it with :func:`write`)."""
    stored = _stored(await next_seq(db, conversation_id), rows, utcnow())
    await _insert(db, conversation_id, stored)
    return stored


class Appender:
    """Appends outside other work, remembering each conversation's last number."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._last: dict[str, int] = {}

    def note(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Rows this process wrote or read: the next append starts after them."""
        if rows:
            self._last[conversation_id] = max(self._last.get(conversation_id, 0), rows[-1].seq)

    async def append(self, conversation_id: str, rows: Sequence[NewRow]) -> list[TimelineRow]:
        for attempt in range(ATTEMPTS):
            try:
                async with self._engine.begin() as connection:
                    last = self._last.get(conversation_id)
                    first = (
                        last + 1
                        if last is not None
                        else await next_seq(connection, conversation_id)
                    )
                    stored = _stored(first, rows, utcnow())
                    await _insert(connection, conversation_id, stored)
            except (IntegrityError, OperationalError) as error:
                self._last.pop(conversation_id, None)  # someone else wrote: ask the store
                if attempt == ATTEMPTS - 1 or not _retryable(error):
                    raise
                continue
            self._last[conversation_id] = stored[-1].seq
            return stored
        raise AssertionError("unreachable")
