"""The write that ends a run, on a SQLite file: through the store's writer.

The same statements as :func:`corral.runtime.endings.end_run`'s SQLAlchemy transaction, in
the same order and in one transaction: the run's open approvals and decisions closed, the
run moved to its outcome (only from the statuses given, and under the held lease), its
``run_ended`` card appended, its conversation freed. Through SQLAlchemy and aiosqlite those
seven statements cost about twenty thread hops; the writer commits them inline when the
write lock is free (see :mod:`corral.store.writer`). Values are stored as SQLAlchemy stores
them (times as its text, JSON as ``json.dumps``), so either path reads back the same.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from corral.runtime.appends import insert_work, run_written, stored_rows, stored_time
from corral.runtime.run_reads import run_move
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store.writer import SqliteWriter, Work

__all__ = ["end_through_writer"]

_CLOSE = (
    "UPDATE {table} SET status = 'closed', decided_at = ?, note = ? "
    "WHERE run_id = ? AND status = 'pending'"
)
_RELEASE = "UPDATE conversations SET active_run_id = NULL WHERE id = ? AND active_run_id = ?"


def _end_work(
    now: datetime,
    *,
    run_id: str,
    conversation_id: str,
    status: str,
    from_statuses: Sequence[str],
    held_lease: int | None,
    values: Mapping[str, Any],
    card: NewRow,
    note: str,
) -> Work[int | None]:
    at = stored_time(now)
    move, parameters = run_move(
        now,
        run_id,
        from_statuses=from_statuses,
        to=status,
        values=values,
        held_lease=held_lease,
    )
    append = insert_work(conversation_id, [card], now)

    def work(db: sqlite3.Connection) -> int | None:
        db.execute(_CLOSE.format(table="approvals"), (at, note, run_id))
        db.execute(_CLOSE.format(table="decisions"), (at, note, run_id))
        if db.execute(move, parameters).rowcount != 1:
            return None
        first = append(db)
        db.execute(_RELEASE, (conversation_id, run_id))
        return first

    return work


async def end_through_writer(
    writer: SqliteWriter,
    *,
    run_id: str,
    conversation_id: str,
    status: str,
    from_statuses: Sequence[str],
    held_lease: int | None,
    values: Mapping[str, Any],
    card: NewRow,
    note: str,
) -> list[TimelineRow] | None:
    """End the run in one committed transaction: its stored card row, or None when the run
    was no longer in ``from_statuses`` (or under ``held_lease``); its approvals and
    decisions are closed either way, as on the SQLAlchemy path."""
    first, now = await run_written(
        writer,
        partial(
            _end_work,
            run_id=run_id,
            conversation_id=conversation_id,
            status=status,
            from_statuses=from_statuses,
            held_lease=held_lease,
            values=values,
            card=card,
            note=note,
        ),
    )
    return None if first is None else stored_rows(first, [card], now)
