"""Conversations in the store: creation, access, appending rows, the one-active-run claim.

Rows are appended through :mod:`corral.runtime.appends`. ``active_run_id`` is claimed
with a compare-and-set: a conversation never has two turns in flight, in any process.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from corral.errors import NotFound, UsageError
from corral.policy.identity import Caller
from corral.runtime.appends import insert_of, run_written
from corral.runtime.collector import collector_paused
from corral.runtime.timeline import TimelineRow
from corral.store import runtime_tables as rt
from corral.store.meta_reads import MetaReader
from corral.store.raw_reads import fetch_all
from corral.store.tables import utcnow
from corral.store.writer import SqliteWriter, Work

__all__ = [
    "ConversationInfo",
    "ConversationStore",
    "claim_conversation",
    "release_conversation",
]

_ROWS_IN_BULK = (
    "SELECT seq, kind, data, run_id, user_id, call_id, created_at "
    "FROM conversation_rows WHERE conversation_id = ? AND seq > ? ORDER BY seq"
)
"""Plain columns: splicing the rows into one JSON document in SQLite (``json_quote`` and
``group_concat`` over every column) cost more than the driver's own tuples."""
_RUN_ROWS_IN_BULK = _ROWS_IN_BULK.replace(" ORDER BY", " AND run_id = ? ORDER BY")
INLINE_ROWS = 256
_PROFILES = (
    "SELECT c.profile, p.profile FROM conversations AS c "
    "LEFT OUTER JOIN delegations AS d ON d.conversation_id = c.id "
    "LEFT OUTER JOIN conversations AS p ON p.id = d.parent_conversation_id WHERE c.id = ?"
)
"""At most this many rows are read on the calling thread (a run's first prompt, its
result); more go through the session, in aiosqlite's thread."""

MANAGE_FEATURE = "conversations.manage"
"""Reading and writing conversations one does not own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationInfo:
    id: str
    owner_id: str
    agent: str
    model: str | None
    profile: str
    title: str
    last_seq: int
    active_run_id: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: rt.Conversation, last_seq: int | None = None) -> ConversationInfo:
        return cls(
            id=row.id,
            owner_id=row.owner_id,
            agent=row.agent,
            model=row.model,
            profile=row.profile,
            title=row.title,
            last_seq=int(last_seq or 0),
            active_run_id=row.active_run_id,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner_id": self.owner_id,
            "agent": self.agent,
            "model": self.model,
            "profile": self.profile,
            "title": self.title,
            "last_seq": self.last_seq,
            "active_run_id": self.active_run_id,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def check_access(self, caller: Caller) -> None:
        """Only the owner (or a holder of ``conversations.manage``) reads and writes it.

        Anyone else gets the unknown-id answer word for word, so ids cannot be probed.
        """
        if caller.user_id != self.owner_id and not caller.grants.has(MANAGE_FEATURE):
            raise NotFound(f"no conversation {self.id!r}; `corral conversations list`")


async def claim_conversation(session: AsyncSession, conversation_id: str, run_id: str) -> bool:
    """Make ``run_id`` the conversation's active run if none is; False when busy."""
    outcome = await session.execute(
        update(rt.Conversation)
        .where(rt.Conversation.id == conversation_id, rt.Conversation.active_run_id.is_(None))
        .values(active_run_id=run_id, updated_at=utcnow())
    )
    return int(getattr(outcome, "rowcount", 0)) == 1


async def release_conversation(session: AsyncSession, conversation_id: str, run_id: str) -> None:
    await session.execute(
        update(rt.Conversation)
        .where(rt.Conversation.id == conversation_id, rt.Conversation.active_run_id == run_id)
        .values(active_run_id=None)
    )


def _insert_work(row: rt.Conversation, now: datetime) -> Work[None]:
    row.created_at = row.updated_at = now
    sql, values = insert_of(row)

    def work(db: sqlite3.Connection) -> None:
        db.execute(sql, values)

    return work


class ConversationStore:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        reader: MetaReader | None = None,
        writer: SqliteWriter | None = None,
    ) -> None:
        self._sessions = sessions
        self._reader = reader
        """Short reads on the calling thread (a SQLite file): see :data:`INLINE_ROWS`."""
        self._writer = writer
        """New conversations inserted through the store's writer (a SQLite file)."""

    async def create(
        self, *, owner_id: str, agent: str, profile: str, model: str | None, title: str = ""
    ) -> ConversationInfo:
        row = rt.Conversation(
            id="c_" + secrets.token_hex(8),
            owner_id=owner_id,
            agent=agent,
            model=model,
            profile=profile,
            title=title,
        )
        if self._writer is not None:
            # One transaction through the store's writer instead of a session's (a chat to a
            # new conversation starts here); every column as the session would store it.
            row.active_run_id = None
            await run_written(self._writer, partial(_insert_work, row))
            return ConversationInfo.of(row)
        async with self._sessions.begin() as session:
            session.add(row)
        return ConversationInfo.of(row)

    def _with_last_seq(self) -> Any:
        c = rt.ConversationRow
        last = (
            select(func.max(c.seq))
            .where(c.conversation_id == rt.Conversation.id)
            .correlate(rt.Conversation)
            .scalar_subquery()
        )
        return select(rt.Conversation, last)

    async def get(self, conversation_id: str) -> ConversationInfo:
        async with self._sessions() as session:
            found = (
                await session.execute(
                    self._with_last_seq().where(rt.Conversation.id == conversation_id)
                )
            ).first()
        if found is None:
            raise NotFound(f"no conversation {conversation_id!r}; `corral conversations list`")
        return ConversationInfo.of(found[0], found[1])

    async def list_conversations(
        self, *, owner_id: str | None = None, limit: int = 100
    ) -> list[ConversationInfo]:
        from corral.store import delegation_tables as dt  # the models load with their use
        from corral.store import workflow_tables as wt

        children = select(dt.Delegation.conversation_id)
        workflow_runs = select(wt.WorkflowRun.conversation_id)
        query = (
            self._with_last_seq()
            .where(rt.Conversation.id.not_in(children))  # a subagent's own conversation
            .where(rt.Conversation.id.not_in(workflow_runs))  # listed with its workflow
            .order_by(rt.Conversation.updated_at.desc())
            .limit(limit)
        )
        if owner_id is not None:
            query = query.where(rt.Conversation.owner_id == owner_id)
        async with self._sessions() as session:
            return [ConversationInfo.of(row, last) for row, last in await session.execute(query)]

    async def profiles(self, conversation_id: str) -> tuple[str, str | None]:
        """The conversation's profile and, when a delegate call started it, its parent
        conversation's (a subagent follows its parent's switches too): one read, as every
        run's start asks (on the calling thread where the store allows it)."""
        rows = (
            None
            if self._reader is None
            else self._reader.fetch_small(_PROFILES, (conversation_id,), 1)
        )
        if rows:
            return rows[0][0], rows[0][1]
        from corral.store import delegation_tables as dt  # the table loads with its first use

        parent = aliased(rt.Conversation)
        query = (
            select(rt.Conversation.profile, parent.profile)
            .outerjoin(dt.Delegation, dt.Delegation.conversation_id == rt.Conversation.id)
            .outerjoin(parent, parent.id == dt.Delegation.parent_conversation_id)
            .where(rt.Conversation.id == conversation_id)
        )
        async with self._sessions() as session:
            found = (await session.execute(query)).first()
        if found is None:
            raise NotFound(f"no conversation {conversation_id!r}; `corral conversations list`")
        return found[0], found[1]

    async def delegated_from(self, conversation_id: str) -> str | None:
        """The conversation whose delegate call started this one, if any."""
        from corral.store import delegation_tables as dt  # the table loads with its first use

        async with self._sessions() as session:
            row = await session.get(dt.Delegation, conversation_id)
        return row.parent_conversation_id if row is not None else None

    async def discard_unused(self, conversation_id: str) -> None:
        """Remove a conversation that never got a row or a run (its first message was
        refused); one that did is kept."""
        used = exists().where(rt.ConversationRow.conversation_id == conversation_id)
        async with self._sessions.begin() as session:
            await session.execute(
                delete(rt.Conversation).where(
                    rt.Conversation.id == conversation_id,
                    rt.Conversation.active_run_id.is_(None),
                    ~used,
                )
            )

    async def update(self, conversation_id: str, **values: Any) -> None:
        allowed = {"model", "profile", "title", "agent"}
        if not set(values) <= allowed:
            raise UsageError(f"cannot change {sorted(set(values) - allowed)} of a conversation")
        async with self._sessions.begin() as session:
            await session.execute(
                update(rt.Conversation)
                .where(rt.Conversation.id == conversation_id)
                .values(**values, updated_at=utcnow())
            )

    async def rows(
        self,
        conversation_id: str,
        *,
        after: int = 0,
        limit: int | None = None,
        run_id: str | None = None,
    ) -> list[TimelineRow]:
        """Rows after sequence number ``after`` (of one run if given), oldest first."""
        c = rt.ConversationRow
        query = (
            select(c.seq, c.kind, c.data, c.run_id, c.user_id, c.call_id, c.created_at)
            .where(c.conversation_id == conversation_id, c.seq > after)
            .order_by(c.seq)
        )
        if run_id is not None:
            query = query.where(c.run_id == run_id)
        if limit is not None:
            query = query.limit(limit)
        # Decoding thousands of rows allocates only survivors; see collector_paused.
        with collector_paused():
            async with self._sessions() as session:
                result = await session.execute(query)
                return [
                    TimelineRow(
                        seq=seq,
                        kind=kind,
                        data=data,
                        run_id=run_id,
                        user_id=user_id,
                        call_id=call_id,
                        created_at=created_at,
                    )
                    for seq, kind, data, run_id, user_id, call_id, created_at in result
                ]

    async def rows_in_bulk(
        self, conversation_id: str, *, after: int = 0, run_id: str | None = None
    ) -> list[TimelineRow]:
        """The same rows as :meth:`rows`, read straight from the driver where it can be:
        a cold prompt reads them all (a run's result, every row of the run), and
        SQLAlchemy's per-row processing plus one JSON decode a row were most of that."""
        with collector_paused():
            sql, parameters = (
                (_ROWS_IN_BULK, (conversation_id, after))
                if run_id is None
                else (_RUN_ROWS_IN_BULK, (conversation_id, after, run_id))
            )
            raw = (
                None
                if self._reader is None
                else self._reader.fetch_small(sql, parameters, INLINE_ROWS)
            )
            if raw is None:
                async with self._sessions() as session:
                    raw = await fetch_all(session, sql, parameters)
            if raw is None:
                return await self.rows(conversation_id, after=after, run_id=run_id)
            if not raw:
                return []
            # The stored ``data`` is JSON text already: spliced into one array, Python decodes
            # once instead of once a row (a third of the cost of a cold read).
            decoded = json.loads("[" + ",".join([r[2] or "null" for r in raw]) + "]")
            parse_time = datetime.fromisoformat
            stored = TimelineRow.stored
            return [
                stored(seq, kind, data, run_id, user_id, call_id, parse_time(at) if at else None)
                for (seq, kind, _, run_id, user_id, call_id, at), data in zip(
                    raw, decoded, strict=True
                )
            ]
