"""The store's writer thread: committed when the caller hears back, shared commits, failures
kept to their own work, a clean close — on real SQLite files read by other connections."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from corral.store import make_engine
from corral.store.pg_writer import PgWriter
from corral.store.writer import CHECKPOINT_EVERY, SqliteWriter, open_writer


def _database(tmp_path: Path) -> Path:
    path = tmp_path / "w.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE items (n INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    db.close()
    return path


def _items(path: Path) -> list[tuple[int, str]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT n, text FROM items ORDER BY n").fetchall()
    finally:
        db.close()


def _wal_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


def _insert(n: int, text: str | None = "x") -> Callable[[sqlite3.Connection], int]:
    def work(db: sqlite3.Connection) -> int:
        db.execute("INSERT INTO items (n, text) VALUES (?, ?)", (n, text))
        return n

    return work


async def test_a_write_is_committed_and_visible_to_other_connections_when_it_returns(
    tmp_path: Path,
) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    try:
        assert await writer.run(_insert(1)) == 1
        assert _items(path) == [(1, "x")]  # another connection, no waiting
    finally:
        writer.close()


async def test_works_queued_together_share_a_commit_and_a_failure_stays_with_its_own(
    tmp_path: Path,
) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    held, release = threading.Event(), threading.Event()

    def hold(db: sqlite3.Connection) -> str:
        held.set()
        release.wait(10)
        return "held"

    try:
        first = writer.submit(hold)
        await asyncio.to_thread(held.wait, 10)
        # Queued while the thread is busy: these run as one transaction, a savepoint each.
        transactions: list[bool] = []

        def in_transaction(db: sqlite3.Connection) -> bool:
            transactions.append(db.in_transaction)
            return db.in_transaction

        queued = [
            writer.submit(_insert(2)),
            writer.submit(_insert(3, None)),  # NOT NULL: fails alone
            writer.submit(_insert(4)),
            writer.submit(in_transaction),
        ]
        release.set()
        assert await first == "held"
        results = await asyncio.gather(*queued, return_exceptions=True)
        assert results[0] == 2 and results[2] == 4 and results[3] is True
        assert isinstance(results[1], sqlite3.IntegrityError)
        assert _items(path) == [(2, "x"), (4, "x")]
    finally:
        release.set()
        writer.close()


async def test_a_failed_work_alone_stores_nothing_of_itself(tmp_path: Path) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))

    def half(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO items (n, text) VALUES (7, 'first half')")
        raise ValueError("second half failed")

    try:
        with pytest.raises(ValueError, match="second half"):
            await writer.run(half)
        assert _items(path) == []
        assert await writer.run(_insert(8)) == 8  # the writer goes on
        assert _items(path) == [(8, "x")]
    finally:
        writer.close()


async def test_the_writer_waits_for_another_connections_write_lock(tmp_path: Path) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO items (n, text) VALUES (1, 'other')")
        pending = writer.submit(_insert(2))  # queued while the lock is held elsewhere
        other.execute("COMMIT")
        assert await pending == 2
        assert _items(path) == [(1, "other"), (2, "x")]
    finally:
        other.close()
        writer.close()


async def test_close_commits_what_is_queued_and_then_refuses_clearly(tmp_path: Path) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    pending = writer.submit(_insert(1))
    await asyncio.to_thread(writer.close)
    assert await pending == 1
    assert _items(path) == [(1, "x")]
    with pytest.raises(RuntimeError, match=r"writer of '.*w\.db' is closed"):
        await writer.run(_insert(2))
    writer.close()  # closing twice is harmless


async def test_a_sqlite_file_gets_a_thread_postgresql_a_kept_connection(tmp_path: Path) -> None:
    on_file = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'f.db'}")
    in_memory = make_engine("sqlite+aiosqlite://")
    on_postgres = make_engine("postgresql+asyncpg://corral@localhost/corral")
    try:
        writer = open_writer(on_file)
        assert writer is not None and writer.path == str(tmp_path / "f.db")
        assert open_writer(in_memory) is None
        assert isinstance(open_writer(on_postgres), PgWriter)
    finally:
        for engine in (on_file, in_memory, on_postgres):
            await engine.dispose()


async def test_with_the_lock_free_a_write_commits_inline_without_the_thread(
    tmp_path: Path,
) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    seen: list[str] = []

    def where(db: sqlite3.Connection) -> int:
        seen.append(threading.current_thread().name)
        return 1

    try:
        assert await writer.run(where) == 1
        assert seen == [threading.current_thread().name]
        assert await writer.run(_insert(5)) == 5
        assert _items(path) == [(5, "x")]
    finally:
        writer.close()


async def test_with_the_lock_held_elsewhere_run_waits_in_the_thread_not_the_loop(
    tmp_path: Path,
) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    seen: list[str] = []

    def where(db: sqlite3.Connection) -> int:
        seen.append(threading.current_thread().name)
        db.execute("INSERT INTO items (n, text) VALUES (2, 'writer')")
        return 2

    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO items (n, text) VALUES (1, 'other')")
        pending = asyncio.ensure_future(writer.run(where))
        # One loop turn runs the task's first step, the inline attempt that finds the lock
        # taken and hands the work to the thread; without it, under load, the COMMIT below
        # could land first and the work would rightly run inline.
        await asyncio.sleep(0)
        # The event loop is free while the writer waits: this thread commits the other side.
        await asyncio.to_thread(other.execute, "COMMIT")
        assert await pending == 2
        assert seen == [f"corral-writer:{path}"]
        assert _items(path) == [(1, "other"), (2, "writer")]
    finally:
        other.close()
        writer.close()


async def test_the_thread_checkpoints_what_the_inline_commits_leave(tmp_path: Path) -> None:
    path = _database(tmp_path)
    writer = SqliteWriter(str(path))
    filler = "y" * 3000

    async def cycle(start: int) -> int:
        for n in range(start, start + CHECKPOINT_EVERY):
            await writer.run(_insert(n, filler))
        await writer.submit(lambda db: None)  # queued after the checkpoint: it has run
        return _wal_size(path)

    try:
        first = await cycle(0)
        second = await cycle(CHECKPOINT_EVERY)
        # Checkpointed, the log starts over instead of growing by another cycle's pages.
        assert second < first * 1.5
        assert len(_items(path)) == 2 * CHECKPOINT_EVERY
    finally:
        writer.close()
