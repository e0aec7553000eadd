"""Checkpoint rows: which writing calls of a conversation changed files, and how much.

The change sets themselves are on disk (see :mod:`corral.shell.checkpoints.keeper`); the
rows order them within a conversation and say which ones retention drops.

A call's row is written behind it (:meth:`CheckpointRows.queue`): one task inserts the
queued rows, several in one statement, right after the call returns, and every read here
first waits for it, so a reader in this process never misses a row. A crash in those few
milliseconds loses the row (its change set stays on disk, unlisted)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store.shell_tables import CheckpointRecord
from corral.store.tables import utcnow

__all__ = ["CallScope", "CheckpointRows", "StoredCheckpoint"]

log = logging.getLogger("corral.shell")
_INSERT = insert(CheckpointRecord)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallScope:
    """Whose call a checkpoint belongs to."""

    conversation_id: str | None = None
    run_id: str | None = None
    user_id: str = ""
    tool: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredCheckpoint:
    step: int
    """1 for the conversation's first kept checkpoint, counting in order of creation."""
    call_id: str
    tool: str
    user_id: str
    files_changed: int
    bytes: int
    created_at: datetime

    def to_json(self) -> dict[str, object]:
        return {
            "step": self.step,
            "id": self.call_id,
            "tool": self.tool,
            "user_id": self.user_id,
            "files_changed": self.files_changed,
            "bytes": self.bytes,
            "created_at": self.created_at.isoformat(),
        }


class CheckpointRows:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._queued: list[dict[str, object]] = []
        self._writing: asyncio.Task[None] | None = None
        self._writes: list[dict[str, object]] = []
        """The rows the writing task holds now."""
        self.lost = 0
        """Rows whose write failed (each one logged)."""

    async def add(self, call_id: str, scope: CallScope, *, files_changed: int, size: int) -> None:
        """Write a call's row now (with any queued before it)."""
        self.queue(call_id, scope, files_changed=files_changed, size=size)
        await self.flush()

    def queue(self, call_id: str, scope: CallScope, *, files_changed: int, size: int) -> None:
        """Write a call's row behind it: the insert runs on this event loop's next turns;
        reads here wait for it (:meth:`flush`). A failed write is logged, never raised."""
        self._queued.append(
            {
                "call_id": call_id,
                "conversation_id": scope.conversation_id,
                "run_id": scope.run_id,
                "user_id": scope.user_id[:64],
                "tool": scope.tool[:100],
                "files_changed": files_changed,
                "bytes": size,
                "created_at": utcnow(),
            }
        )
        if self._writing is None:
            self._writing = asyncio.get_running_loop().create_task(self._write())

    @property
    def pending(self) -> int:
        """Rows queued and not written yet (those being written included)."""
        return len(self._queued) + len(self._writes)

    async def flush(self) -> None:
        """Wait until every queued row is written (or its failure logged)."""
        while self._writing is not None:
            await asyncio.shield(self._writing)

    async def _write(self) -> None:
        try:
            while self._queued:
                rows, self._queued = self._queued, []
                self._writes = rows
                try:
                    await self._insert(rows)
                except Exception:
                    if len(rows) == 1:
                        self._failed(rows[0])
                        continue
                    # one bad row (its conversation deleted meanwhile, say) must not cost
                    # the others theirs
                    for row in rows:
                        try:
                            await self._insert([row])
                        except Exception:
                            self._failed(row)
        except asyncio.CancelledError:
            unwritten = len(self._writes) + len(self._queued)
            self.lost += unwritten
            log.error("%d checkpoint rows not written: their writer was cancelled", unwritten)
            self._queued = []
            raise
        finally:
            self._writes = []
            self._writing = None

    def _failed(self, row: dict[str, object]) -> None:
        self.lost += 1
        log.exception(
            "checkpoint row of call %s (conversation %s) could not be written; its change set "
            "stays on disk but is not listed",
            row["call_id"],
            row["conversation_id"],
        )

    async def _insert(self, rows: list[dict[str, object]]) -> None:
        # A plain insert, not the ORM's unit of work: half the CPU of a row per call.
        async with self._sessions() as session:
            connection = await session.connection()
            await connection.execute(_INSERT, rows)
            await session.commit()

    async def count(self, conversation_id: str | None) -> int:
        """How many checkpoints the conversation keeps (None: calls outside any)."""
        query = select(func.count()).select_from(CheckpointRecord)
        query = query.where(
            CheckpointRecord.conversation_id.is_(None)
            if conversation_id is None
            else CheckpointRecord.conversation_id == conversation_id
        )
        await self.flush()
        async with self._sessions() as session:
            return int(await session.scalar(query) or 0)

    async def for_conversation(self, conversation_id: str) -> list[StoredCheckpoint]:
        """The conversation's kept checkpoints, oldest first."""
        query = (
            select(CheckpointRecord)
            .where(CheckpointRecord.conversation_id == conversation_id)
            .order_by(CheckpointRecord.id)
        )
        await self.flush()
        async with self._sessions() as session:
            rows = list(await session.scalars(query))
        return [
            StoredCheckpoint(
                step=step,
                call_id=r.call_id,
                tool=r.tool,
                user_id=r.user_id,
                files_changed=r.files_changed,
                bytes=r.bytes,
                created_at=r.created_at,
            )
            for step, r in enumerate(rows, start=1)
        ]

    async def expired(self, *, keep_count: int, keep_days: int) -> list[str]:
        """Call ids retention drops: beyond the newest ``keep_count`` of each conversation
        (calls outside any conversation count as one), or older than ``keep_days``."""
        rank = (
            func.row_number()
            .over(
                partition_by=func.coalesce(CheckpointRecord.conversation_id, ""),
                order_by=CheckpointRecord.id.desc(),
            )
            .label("rank")
        )
        ranked = select(CheckpointRecord.call_id, CheckpointRecord.created_at, rank).subquery()
        cutoff = datetime.now(UTC) - timedelta(days=keep_days)
        query = select(ranked.c.call_id).where(
            (ranked.c.rank > keep_count) | (ranked.c.created_at < cutoff)
        )
        await self.flush()
        async with self._sessions() as session:
            return list(await session.scalars(query))

    async def drop(self, call_ids: Sequence[str]) -> None:
        if not call_ids:
            return
        await self.flush()
        async with self._sessions.begin() as session:
            await session.execute(
                delete(CheckpointRecord).where(CheckpointRecord.call_id.in_(list(call_ids)))
            )
