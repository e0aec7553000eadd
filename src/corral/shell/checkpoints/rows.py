"""Checkpoint rows: which writing calls of a conversation changed files, and how much.

The change sets themselves are on disk (see :mod:`corral.shell.checkpoints.keeper`); the
rows order them within a conversation and say which ones retention drops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store.shell_tables import CheckpointRecord
from corral.store.tables import utcnow

__all__ = ["CallScope", "CheckpointRows", "StoredCheckpoint"]

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

    async def add(self, call_id: str, scope: CallScope, *, files_changed: int, size: int) -> None:
        # A plain insert, not the ORM's unit of work: half the CPU of a row per call.
        row = {
            "call_id": call_id,
            "conversation_id": scope.conversation_id,
            "run_id": scope.run_id,
            "user_id": scope.user_id[:64],
            "tool": scope.tool[:100],
            "files_changed": files_changed,
            "bytes": size,
            "created_at": utcnow(),
        }
        async with self._sessions() as session:
            connection = await session.connection()
            await connection.execute(_INSERT, [row])
            await session.commit()

    async def count(self, conversation_id: str | None) -> int:
        """How many checkpoints the conversation keeps (None: calls outside any)."""
        query = select(func.count()).select_from(CheckpointRecord)
        query = query.where(
            CheckpointRecord.conversation_id.is_(None)
            if conversation_id is None
            else CheckpointRecord.conversation_id == conversation_id
        )
        async with self._sessions() as session:
            return int(await session.scalar(query) or 0)

    async def for_conversation(self, conversation_id: str) -> list[StoredCheckpoint]:
        """The conversation's kept checkpoints, oldest first."""
        query = (
            select(CheckpointRecord)
            .where(CheckpointRecord.conversation_id == conversation_id)
            .order_by(CheckpointRecord.id)
        )
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
        async with self._sessions() as session:
            return list(await session.scalars(query))

    async def drop(self, call_ids: Sequence[str]) -> None:
        if not call_ids:
            return
        async with self._sessions.begin() as session:
            await session.execute(
                delete(CheckpointRecord).where(CheckpointRecord.call_id.in_(list(call_ids)))
            )
