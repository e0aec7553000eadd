"""A run's row read and claimed without SQLAlchemy, on a SQLite file.

Every run's start reads its row, claims it (``UPDATE … RETURNING``) and its caller reads
it again once it settled; through sessions and aiosqlite each cost about a millisecond of
CPU. Here the read is one statement on the calling thread (:class:`MetaReader`) and the
claim one transaction through the store's writer, and the stored values are decoded as
SQLAlchemy decodes them (JSON text, its time text as naive times, booleans from integers),
so :meth:`RunRecord.of` makes the same record of either.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from types import SimpleNamespace
from typing import Any

from sqlalchemy import JSON, Boolean, ClauseElement, DateTime
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.runtime.appends import run_written, stored_time
from corral.runtime.runs import TERMINAL, RunRecord, RunStatus, RunStore
from corral.store import runtime_tables as rt
from corral.store.meta_reads import MetaReader
from corral.store.writer import SqliteWriter, Work

__all__ = ["READ_RUN", "SqliteRunStore", "claim_through_writer", "read_run", "run_move"]

_COLUMNS = tuple(rt.Run.__table__.columns)
_NAMES = tuple(column.key for column in _COLUMNS)
_JSON = frozenset(c.key for c in _COLUMNS if isinstance(c.type, JSON))
_TIMES = frozenset(c.key for c in _COLUMNS if isinstance(c.type, DateTime))
_FLAGS = frozenset(c.key for c in _COLUMNS if isinstance(c.type, Boolean))
READ_RUN = f"SELECT {', '.join(_NAMES)} FROM runs WHERE id = ?"


def _decoded(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _JSON:
        return json.loads(value)
    if name in _TIMES:
        return datetime.fromisoformat(value)
    if name in _FLAGS:
        return bool(value)
    return value


def record_of(values: Sequence[Any]) -> RunRecord:
    """The record of a run row read as stored (the columns of :data:`READ_RUN`)."""
    row: Any = SimpleNamespace(
        **{name: _decoded(name, value) for name, value in zip(_NAMES, values, strict=True)}
    )
    return RunRecord.of(row)


def read_run(reader: MetaReader, run_id: str) -> RunRecord | bool | None:
    """The run, None when there is none, or False when the file could not be read at once
    (the caller then reads through its session)."""
    rows = reader.fetch_small(READ_RUN, (run_id,), 1)
    if rows is None:
        return False
    return record_of(rows[0]) if rows else None


def run_move(
    now: datetime,
    run_id: str,
    *,
    from_statuses: Sequence[str],
    to: str,
    values: Mapping[str, Any],
    held_lease: int | None = None,
    bump_lease: bool = False,
    returning: bool = False,
) -> tuple[str, list[Any]]:
    """The ``UPDATE runs`` (and its parameters) that moves ``run_id`` to ``to`` only from
    ``from_statuses`` (and, with ``held_lease``, only under that lease), setting ``values``
    stored as SQLAlchemy stores them; ``bump_lease`` moves the lease one up, ``returning``
    answers the columns of :data:`READ_RUN`."""
    at = stored_time(now)
    sets: dict[str, Any] = {"status": to, "updated_at": at}
    for name, value in values.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        elif isinstance(value, datetime):
            value = stored_time(value)
        sets[name] = value
    if to in TERMINAL:
        sets.setdefault("ended_at", at)
    assignments = [f"{name} = ?" for name in sets]
    if bump_lease:
        assignments.append("lease = lease + 1")
    sql = (
        f"UPDATE runs SET {', '.join(assignments)} WHERE id = ? "
        f"AND status IN ({', '.join('?' * len(from_statuses))})"
    )
    parameters: list[Any] = [*sets.values(), run_id, *from_statuses]
    if held_lease is not None:
        sql += " AND lease = ?"
        parameters.append(held_lease)
    if returning:
        sql += f" RETURNING {', '.join(_NAMES)}"
    return sql, parameters


def _claim_work(
    now: datetime,
    *,
    run_id: str,
    from_statuses: Sequence[str],
    to: RunStatus,
    values: dict[str, Any],
    bump_lease: bool,
) -> Work[tuple[Any, ...] | None]:
    sql, parameters = run_move(
        now,
        run_id,
        from_statuses=from_statuses,
        to=to,
        values=values,
        bump_lease=bump_lease,
        returning=True,
    )

    def work(db: sqlite3.Connection) -> tuple[Any, ...] | None:
        found = db.execute(sql, parameters).fetchall()  # to its end: the statement is done
        return tuple(found[0]) if found else None

    return work


async def claim_through_writer(
    writer: SqliteWriter,
    run_id: str,
    *,
    from_statuses: Sequence[str],
    to: RunStatus,
    values: dict[str, Any],
    bump_lease: bool,
) -> RunRecord | None:
    """Move the run to ``to`` (only from ``from_statuses``) setting ``values`` and, with
    ``bump_lease``, its lease one up, in one committed transaction: the run as the move
    left it, or None when it did not move."""
    found, _ = await run_written(
        writer,
        partial(
            _claim_work,
            run_id=run_id,
            from_statuses=from_statuses,
            to=to,
            values=values,
            bump_lease=bump_lease,
        ),
    )
    return None if found is None else record_of(found)


class SqliteRunStore(RunStore):
    """The run store of a SQLite file: a run's row read on the calling thread, its claim
    through the store's writer; anything else (and a read the file did not answer at once)
    through sessions, as :class:`RunStore`."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        reader: MetaReader,
        writer: SqliteWriter,
    ) -> None:
        super().__init__(sessions)
        self._reader = reader
        self._writer = writer

    async def find(self, run_id: str) -> RunRecord | None:
        read = read_run(self._reader, run_id)
        if not isinstance(read, bool):
            return read
        return await super().find(run_id)

    async def claim(
        self,
        run_id: str,
        *,
        from_statuses: Sequence[str],
        to: RunStatus,
        bump_lease: bool = False,
        **values: Any,
    ) -> RunRecord | None:
        if any(isinstance(value, ClauseElement) for value in values.values()):
            return await super().claim(
                run_id, from_statuses=from_statuses, to=to, bump_lease=bump_lease, **values
            )
        return await claim_through_writer(
            self._writer,
            run_id,
            from_statuses=from_statuses,
            to=to,
            values=values,
            bump_lease=bump_lease,
        )
