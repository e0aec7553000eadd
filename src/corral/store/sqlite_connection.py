"""The engine's SQLite connections: aiosqlite's, minus the thread hops that do no database
work.

aiosqlite sends every call to the connection's own thread, and a read through SQLAlchemy
makes six: open a cursor, execute, fetch, close the cursor, and two rollbacks when the session
closes (its transaction's, then the pool's reset). On a VM with an idle second vCPU a hop
costs 50-100 µs. Opening and closing a cursor are done here on the caller's thread, and a
rollback with no transaction open is skipped — each only while the connection's thread has
no call of this connection in hand (a statement cancelled on our side may still be running
there, or about to open a transaction); otherwise they take the hop as before. SQLAlchemy
already opens the connection with ``check_same_thread=False``, and it uses one connection
from one task at a time. A read is then two hops (execute, fetch), a write two (execute,
commit).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import aiosqlite
from aiosqlite.context import contextmanager

__all__ = ["InlineHousekeepingConnection", "connect_sqlite"]

ITER_CHUNK_SIZE = 64
"""aiosqlite's default rows per fetch when iterating a cursor."""


class InlineHousekeepingConnection(aiosqlite.Connection):
    """An aiosqlite connection that knows whether its thread has a call of its own in hand,
    and does what needs no thread on the caller's when it has none."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, ITER_CHUNK_SIZE)
        self._count_lock = threading.Lock()
        self._in_hand = 0

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self._count_lock:
            self._in_hand += 1

        def counted() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count_lock:
                    self._in_hand -= 1

        return await super()._execute(counted)  # type: ignore[no-untyped-call]

    def idle(self) -> bool:
        """Whether no call of this connection is queued or running in its thread."""
        with self._count_lock:
            return self._in_hand == 0

    @contextmanager  # as aiosqlite's: awaitable, or ``async with``
    async def cursor(self) -> aiosqlite.Cursor:
        db = self._connection
        if db is not None and self.idle():
            return _InlineCloseCursor(self, db.cursor())
        return _InlineCloseCursor(self, await self._execute(self._conn.cursor))

    async def rollback(self) -> None:
        db = self._connection
        if db is not None and self.idle() and not db.in_transaction:
            return
        await super().rollback()


class _InlineCloseCursor(aiosqlite.Cursor):
    _conn: InlineHousekeepingConnection

    async def close(self) -> None:
        if self._conn.idle():
            self._cursor.close()
            return
        await super().close()


def connect_sqlite(database: str, **options: Any) -> InlineHousekeepingConnection:
    """An awaitable connection to ``database``, opened as ``sqlite3.connect`` with
    ``options`` would open it; its thread is a daemon, as SQLAlchemy makes aiosqlite's."""
    connection = InlineHousekeepingConnection(lambda: sqlite3.connect(database, **options))
    connection._thread.daemon = True
    return connection
