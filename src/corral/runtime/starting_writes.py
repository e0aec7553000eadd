"""The write that starts a turn, on a SQLite file: through the store's writer.

The same statements as :func:`corral.runtime.turns.start_turn`'s SQLAlchemy transaction, in
one transaction: the conversation claimed for the new run (only while no run holds it), the
run inserted, queued, and the rows that open it appended. Through SQLAlchemy and aiosqlite
that transaction cost about 3 ms of CPU a turn; the writer commits it inline when the write
lock is free (see :mod:`corral.store.writer`). Values are stored as SQLAlchemy stores them
(times as its text, JSON as ``json.dumps``), every column of the run spelt out from the row
object SQLAlchemy would have inserted, so either path reads back the same.

A turn that queued deliveries ride in on (a report or a message for the person starting
it) takes the SQLAlchemy transaction instead, which reads them, opens the turn with them
and marks them delivered: the work here sees them first and stores nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Final, Literal

from corral.runtime.appends import insert_of, insert_work, run_written, stored_rows, stored_time
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store import runtime_tables as rt
from corral.store.writer import SqliteWriter, Work

__all__ = ["DELIVERIES_QUEUED", "start_through_writer"]

DELIVERIES_QUEUED: Final = "deliveries queued"
"""The answer when deliveries wait to ride in: nothing was stored."""

_QUEUED = (
    "SELECT 1 FROM conversation_deliveries "
    "WHERE conversation_id = ? AND status = 'queued' AND user_id = ? LIMIT 1"
)
_CLAIM = (
    "UPDATE conversations SET active_run_id = ?, updated_at = ? "
    "WHERE id = ? AND active_run_id IS NULL"
)


def _start_work(
    now: datetime, *, row: rt.Run, rows: Sequence[NewRow]
) -> Work[int | Literal["deliveries queued"] | None]:
    at = stored_time(now)
    # What the session's flush would have filled in; every column is then set on the row.
    row.reason, row.ended_at = None, None
    row.lease, row.outage_retries = 0, 0
    row.created_at = row.updated_at = now
    insert_run, values = insert_of(row)
    append = insert_work(row.conversation_id, rows, now)

    def work(db: sqlite3.Connection) -> int | Literal["deliveries queued"] | None:
        if db.execute(_QUEUED, (row.conversation_id, row.user_id)).fetchone() is not None:
            return DELIVERIES_QUEUED
        if db.execute(_CLAIM, (row.id, at, row.conversation_id)).rowcount != 1:
            return None
        db.execute(insert_run, values)
        return append(db)

    return work


async def start_through_writer(
    writer: SqliteWriter, row: rt.Run, rows: Sequence[NewRow]
) -> list[TimelineRow] | Literal["deliveries queued"] | None:
    """Claim the conversation, insert ``row`` (a new queued run, its every column set
    here) and append ``rows`` in one committed transaction: the stored rows; None when
    the conversation is busy; :data:`DELIVERIES_QUEUED` (nothing stored) when deliveries
    for the run's person wait to ride in."""
    first, now = await run_written(writer, partial(_start_work, row=row, rows=rows))
    if first is None or isinstance(first, str):
        return first
    return stored_rows(first, rows, now)
