"""One value of the ``meta`` table, read the cheapest way the store allows.

Every API request reads the configuration version (a revoked token must be refused at once,
in every process). Through SQLAlchemy that read is a pooled connection, a cursor and a
rollback — about a dozen hops to aiosqlite's thread, most of a request's time. Here it is
one statement: on SQLite on the caller's thread, on a read-only connection of its own (a
WAL read never waits for a writer and costs microseconds); on PostgreSQL one round trip on
the writer's kept connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from corral.store.writer import SqliteWriter

if TYPE_CHECKING:
    # Only for the hint: the module imports asyncpg, which a SQLite store never loads.
    from corral.store.pg_writer import PgWriter

__all__ = ["MetaRead", "MetaReader", "meta_reader"]

MetaRead = Callable[[str], Awaitable["int | None"]]


class MetaReader:
    """Reads ``meta`` values (and the other small reads of :meth:`exists`) from one SQLite
    file on the calling thread."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._db: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        db = self._db
        if db is None:
            db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA query_only = ON")
            self._db = db
        return db

    async def read(self, key: str) -> int | None:
        row = self._connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def exists(self, sql: str, parameters: tuple[object, ...]) -> bool | None:
        """Whether ``sql`` (``?`` placeholders) finds a row; None when the file could not be
        read at once (the caller then asks through its session). For the checks that let a
        run's start or end skip work there is none for, without a session's thread hops."""
        try:
            # One row always: the statement runs to its end, so no read stays open.
            (found,) = self._connection().execute(f"SELECT EXISTS ({sql})", parameters).fetchall()
        except sqlite3.OperationalError:
            return None
        return bool(found[0])

    def fetch_small(
        self, sql: str, parameters: tuple[object, ...], most: int
    ) -> list[tuple[Any, ...]] | None:
        """Every row of ``sql`` when there are at most ``most``; None when there are more
        (a long read belongs in a thread, not on the event loop) or the file could not be
        read at once: the caller then reads through its session."""
        try:
            cursor = self._connection().execute(sql, parameters)
            try:
                rows = cursor.fetchmany(most + 1)
            finally:
                cursor.close()  # ends the read, however many rows were left
        except sqlite3.OperationalError:
            return None
        return rows if len(rows) <= most else None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def meta_reader(
    writer: SqliteWriter | PgWriter | None,
) -> tuple[MetaRead | None, MetaReader | None]:
    """The fast read for the store behind ``writer`` (None: use a session), and what to
    close with the store."""
    if writer is None:
        return None, None
    if isinstance(writer, SqliteWriter):
        reader = MetaReader(writer.path)
        return reader.read, reader
    kept = writer

    async def read(key: str) -> int | None:
        rows = await kept.fetch("SELECT value FROM meta WHERE key = $1", key)
        return int(rows[0][0]) if rows else None

    return read, None
