"""The engine's SQLite connection does cursor bookkeeping on the caller's thread and skips
empty rollbacks — but never while a call of its own is still in its thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from corral.store.engine import make_engine
from corral.store.sqlite_connection import InlineHousekeepingConnection, connect_sqlite


def _count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM t").fetchone()[0])


async def _blocker(
    db_path: Path,
) -> tuple[InlineHousekeepingConnection, threading.Event, threading.Event]:
    connection = connect_sqlite(str(db_path), check_same_thread=False)
    await connection  # starts its thread and opens the file
    started, release = threading.Event(), threading.Event()

    def wait_here() -> int:
        started.set()
        release.wait(30)
        return 1

    await connection.create_function("wait_here", 0, wait_here)
    return connection, started, release


async def test_a_rollback_behind_a_queued_write_still_rolls_it_back(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    connection, started, release = await _blocker(path)
    try:
        busy = asyncio.ensure_future(connection.execute("SELECT wait_here()"))
        await asyncio.to_thread(started.wait, 30)
        # Queued behind the busy thread, then given up on our side: it has not begun a
        # transaction yet, but it will.
        write = asyncio.ensure_future(connection.execute("INSERT INTO t VALUES (1)"))
        await asyncio.sleep(0)
        write.cancel()
        rollback = asyncio.ensure_future(connection.rollback())
        release.set()
        await busy
        await rollback
        with pytest.raises(asyncio.CancelledError):
            await write
        await connection.execute("SELECT 1")  # the thread has run all queued before it
        assert not connection._conn.in_transaction
        assert _count(path) == 0
        with sqlite3.connect(path, timeout=0) as other:  # no write lock left held
            other.execute("INSERT INTO t VALUES (2)")
    finally:
        release.set()
        await connection.close()


async def test_a_cursor_closed_while_its_thread_is_busy_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.execute("INSERT INTO t VALUES (7)")
    connection, started, release = await _blocker(path)
    try:
        cursor = await connection.cursor()
        await cursor.execute("SELECT x FROM t")
        busy = asyncio.ensure_future(connection.execute("SELECT wait_here()"))
        await asyncio.to_thread(started.wait, 30)
        closing = asyncio.ensure_future(cursor.close())
        await asyncio.sleep(0)
        assert not closing.done()  # queued behind the busy call, not run beside it
        release.set()
        await busy
        await closing
        with pytest.raises(sqlite3.ProgrammingError):
            cursor._cursor.fetchall()
    finally:
        release.set()
        await connection.close()


async def test_sessions_read_and_write_through_the_quiet_connection(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'e.db'}")
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE t (x INTEGER)"))
            await connection.execute(text("INSERT INTO t VALUES (1), (2)"))
        async with engine.connect() as connection:
            await connection.execute(text("INSERT INTO t VALUES (3)"))
            # closed without a commit: the pool's reset must undo it, not skip it
        async with engine.connect() as connection:
            total = await connection.scalar(text("SELECT sum(x) FROM t"))
        assert total == 3
        assert _count(tmp_path / "e.db") == 2
    finally:
        await engine.dispose()
