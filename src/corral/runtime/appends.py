"""Appending timeline rows: sequence numbers without a counter row, retried on conflict.

A row's number is one past the conversation's highest; the unique ``(conversation_id,
seq)`` constraint settles races between processes, and a writer that loses one simply
retries with fresh numbers.

The hot path — :class:`Appender`, a run storing its steps — goes through the store's
writer. On SQLite (:mod:`corral.store.writer`): one transaction per append, inline when
the write lock is free, else in the writer's thread shared with appends that arrive
meanwhile; the number is read inside that transaction, which holds the write lock, so it
cannot race. On PostgreSQL (:mod:`corral.store.pg_writer`): one ``INSERT … SELECT``
statement, one round trip, that first waits for the conversation's append lock and then
reads the number, so appends from every process take turns instead of racing (retrying
alone let one writer lose to the others eight times running under load). Appends inside
other transactions (a run starting, parking, ending) do not take that lock; when one of
them and a hot append take the same number, the loser retries; on SQLite they first take
the write lock, so they cannot.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store import runtime_tables as rt
from corral.store.pg_writer import KeyTaken, MissingReference, PgWriter
from corral.store.tables import utcnow
from corral.store.writer import SqliteWriter, Work

__all__ = [
    "Appender",
    "Fence",
    "Fenced",
    "append_rows",
    "insert_of",
    "insert_work",
    "next_seq",
    "run_written",
    "stored_rows",
    "stored_time",
    "write",
]

T = TypeVar("T")
Db = AsyncSession | AsyncConnection
ATTEMPTS = 8

_LAST_SEQ = "SELECT max(seq) FROM conversation_rows WHERE conversation_id = ?"
_INSERT = (
    "INSERT INTO conversation_rows "
    "(conversation_id, seq, kind, run_id, user_id, call_id, data, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# corral_last_seq (migration 0012) waits for the conversation's append lock, then reads the
# number afresh; a CTE calls it once for all the rows.
_PG_INSERT = (
    "WITH last AS MATERIALIZED (SELECT corral_last_seq($1::varchar) AS seq) "
    "INSERT INTO conversation_rows "
    "(conversation_id, seq, kind, run_id, user_id, call_id, data, created_at) "
    "SELECT $1::varchar, last.seq + r.n::integer, "
    "r.kind, r.run_id, r.user_id, r.call_id, r.data::json, $7::timestamptz "
    "FROM last, unnest($2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[], "
    "$6::text[]) WITH ORDINALITY AS r(kind, run_id, user_id, call_id, data, n) RETURNING seq"
)
# The same, only while the run still holds the lease the writing worker claimed; FOR SHARE
# makes a takeover's lease bump wait for this statement, or this statement for the bump.
_PG_FENCED_INSERT = _PG_INSERT.replace(
    " RETURNING seq",
    " WHERE EXISTS (SELECT 1 FROM runs WHERE id = $8::varchar AND lease = $9::integer "
    "AND status = 'running' FOR SHARE) RETURNING seq",
)


@dataclass(frozen=True, slots=True)
class Fence:
    """The run and lease a cluster worker claimed: its rows are stored only while both hold."""

    run_id: str
    lease: int


class Fenced(Exception):
    """A worker's write of a run was refused: another worker took the run over (its lease
    moved on) or the run ended. The writer lets the run go."""

    def __init__(self, fence: Fence) -> None:
        super().__init__(
            f"run {fence.run_id} is no longer held under lease {fence.lease}: another worker "
            "took it over or it ended; this worker lets it go"
        )
        self.fence = fence


def stored_time(now: datetime) -> str:
    """``now`` as SQLAlchemy stores a DateTime in SQLite, so either read path parses it back
    the same (spelt out: ``strftime`` is a tenth of an append's own cost)."""
    return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (  # noqa: UP031  # the fastest spelling
        now.year,
        now.month,
        now.day,
        now.hour,
        now.minute,
        now.second,
        now.microsecond,
    )


def _stored(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, datetime):
        return stored_time(value)
    return value


def insert_of(row: Any) -> tuple[str, tuple[Any, ...]]:
    """The INSERT of ORM object ``row`` with every column of its table as set on it, and its
    values stored as SQLAlchemy stores them."""
    table = row.__table__
    names = [column.key for column in table.columns]
    sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    return sql, tuple(_stored(getattr(row, name)) for name in names)


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


def _dialect(db: Db) -> str:
    if isinstance(db, AsyncConnection):
        return db.dialect.name
    return db.get_bind().dialect.name


async def next_seq(db: Db, conversation_id: str) -> int:
    c = rt.ConversationRow
    last = await db.scalar(select(func.max(c.seq)).where(c.conversation_id == conversation_id))
    return int(last or 0) + 1


def stored_rows(first: int, rows: Sequence[NewRow], now: datetime) -> list[TimelineRow]:
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
    if _dialect(db) == "sqlite":
        # Take SQLite's write lock before reading the number, as the writer does: the
        # writer's appends then wait for this transaction instead of taking the same numbers
        # (retrying alone lost eight times running under load).
        c = rt.Conversation
        await db.execute(update(c).where(c.id == conversation_id).values(id=c.id))
    stored = stored_rows(await next_seq(db, conversation_id), rows, utcnow())
    await _insert(db, conversation_id, stored)
    return stored


async def run_written(
    writer: SqliteWriter, work_at: Callable[[datetime], Work[T]]
) -> tuple[T, datetime]:
    """The writer's answer to ``work_at(now)`` and that ``now``; made again with a new time
    while another connection holds the write lock past busy_timeout."""
    for attempt in range(ATTEMPTS):
        now = utcnow()
        try:
            return await writer.run(work_at(now)), now
        except sqlite3.OperationalError as error:
            if attempt == ATTEMPTS - 1 or "locked" not in str(error).lower():
                raise
    raise AssertionError("unreachable")


def insert_work(
    conversation_id: str, rows: Sequence[NewRow], now: datetime
) -> Callable[[sqlite3.Connection], int]:
    """The writer's work for one append: numbers after the stored last, one INSERT a row.
    Data is encoded here, in the caller, so an unencodable row fails its own append."""
    at = stored_time(now)
    values = [
        (row.kind, row.run_id, row.user_id, row.call_id, json.dumps(dict(row.data))) for row in rows
    ]

    def work(db: sqlite3.Connection) -> int:
        (last,) = db.execute(_LAST_SEQ, (conversation_id,)).fetchone()
        first = int(last or 0) + 1
        db.executemany(
            _INSERT,
            [
                (conversation_id, first + i, kind, run_id, user_id, call_id, data, at)
                for i, (kind, run_id, user_id, call_id, data) in enumerate(values)
            ],
        )
        return first

    return work


class Appender:
    """Appends outside other work: through the store's writer (see the module docstring);
    without one, one INSERT through SQLAlchemy remembering each conversation's last number."""

    def __init__(self, engine: AsyncEngine, writer: SqliteWriter | PgWriter | None = None) -> None:
        self._engine = engine
        self._writer = writer
        self._last: dict[str, int] = {}

    def note(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Rows this process wrote or read: the next append starts after them."""
        if rows:
            self._last[conversation_id] = max(self._last.get(conversation_id, 0), rows[-1].seq)

    async def append(
        self, conversation_id: str, rows: Sequence[NewRow], fence: Fence | None = None
    ) -> list[TimelineRow]:
        """Store ``rows`` after the conversation's last, committed when this returns.

        With ``fence`` (a cluster worker's run, on PostgreSQL) the rows are stored only
        while the run is running under that lease, checked in the same statement; else
        :class:`Fenced` is raised and nothing is stored."""
        if isinstance(self._writer, SqliteWriter):
            return await self._through_writer(self._writer, conversation_id, rows)
        if isinstance(self._writer, PgWriter):
            return await self._through_pg(self._writer, conversation_id, rows, fence)
        for attempt in range(ATTEMPTS):
            try:
                async with self._engine.begin() as connection:
                    last = self._last.get(conversation_id)
                    first = (
                        last + 1
                        if last is not None
                        else await next_seq(connection, conversation_id)
                    )
                    stored = stored_rows(first, rows, utcnow())
                    await _insert(connection, conversation_id, stored)
            except (IntegrityError, OperationalError) as error:
                self._last.pop(conversation_id, None)  # someone else wrote: ask the store
                if attempt == ATTEMPTS - 1 or not _retryable(error):
                    raise
                continue
            self._last[conversation_id] = stored[-1].seq
            return stored
        raise AssertionError("unreachable")

    async def _through_writer(
        self, writer: SqliteWriter, conversation_id: str, rows: Sequence[NewRow]
    ) -> list[TimelineRow]:
        try:
            first, now = await run_written(writer, partial(insert_work, conversation_id, rows))
        except sqlite3.IntegrityError as error:
            # The number is read under the write lock, so only the conversation is missing.
            raise NotFound(
                f"no conversation {conversation_id!r} to append to ({error}); start one first"
            ) from error
        return stored_rows(first, rows, now)

    async def _through_pg(
        self,
        writer: PgWriter,
        conversation_id: str,
        rows: Sequence[NewRow],
        fence: Fence | None,
    ) -> list[TimelineRow]:
        if not rows:
            return []
        now = utcnow()
        columns = (
            [row.kind for row in rows],
            [row.run_id for row in rows],
            [row.user_id for row in rows],
            [row.call_id for row in rows],
            [json.dumps(dict(row.data)) for row in rows],
        )
        for attempt in range(ATTEMPTS):
            try:
                if fence is None:
                    returned = await writer.fetch(_PG_INSERT, conversation_id, *columns, now)
                else:
                    returned = await writer.fetch(
                        _PG_FENCED_INSERT,
                        conversation_id,
                        *columns,
                        now,
                        fence.run_id,
                        fence.lease,
                    )
            except KeyTaken:
                if attempt == ATTEMPTS - 1:
                    raise
                continue  # another process took the number: read it again
            except MissingReference as error:
                raise NotFound(
                    f"no conversation {conversation_id!r} to append to ({error}); start one first"
                ) from error
            if not returned:
                assert fence is not None  # an unfenced insert stores every row or fails
                raise Fenced(fence)
            return stored_rows(min(seq for (seq,) in returned), rows, now)
        raise AssertionError("unreachable")
