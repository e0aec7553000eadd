"""One writer per SQLite database: a ``sqlite3`` connection of its own that commits the hot
writes (timeline appends) in at most one thread hop per transaction.

Through aiosqlite and SQLAlchemy a one-row append takes about eleven thread hops and costs
ten times a raw insert and commit. Here a caller hands the writer a *work* — a plain function
of the connection — and the writer runs it inside ``BEGIN IMMEDIATE`` … ``COMMIT``:

- *inline*, on the caller's thread, when the database's write lock is free at once: no hop
  at all, and the event loop is held for about one raw insert and commit (tens of µs; the
  inline connection never checkpoints and never waits for a lock);
- otherwise in the writer's thread, which waits for the lock (``busy_timeout``) and wakes
  the caller once. Works that arrive while it waits or commits run together in its next
  transaction (each in its own savepoint, so one failure fails only its own caller):
  concurrent appends share a commit instead of queueing for one each. The thread also runs
  the checkpoints the inline connection leaves out.

Durability is SQLite's, as configured for the engine (WAL, ``synchronous=NORMAL``): a
committed transaction survives the process being killed. A caller hears back only after
``COMMIT`` returned, so whatever a caller was told is stored, is. ``BEGIN IMMEDIATE`` takes
the write lock before the work reads anything, so a work that reads and then writes (the
next sequence number, say) never races another writer, in this process or another; the
engine's own connections wait for the lock as they wait for any other process's.

On PostgreSQL :func:`open_writer` gives a :class:`~corral.store.pg_writer.PgWriter`;
elsewhere (SQLite in memory) None, and callers keep their SQLAlchemy path.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from sqlalchemy.ext.asyncio import AsyncEngine

from corral.store.pg_writer import PgWriter

__all__ = ["SqliteWriter", "Work", "open_writer"]

T = TypeVar("T")

Work = Callable[[sqlite3.Connection], T]
"""What a caller hands the writer: runs inline or in the writer's thread, inside a
transaction the writer begins and commits."""

BATCH = 256
"""At most this many works share one transaction."""

BUSY_TIMEOUT_MS = 10_000
"""How long the thread's transaction waits for another connection's write lock (as the
engine's do); the inline connection waits not at all."""

CHECKPOINT_EVERY = 256
"""Inline commits between two checkpoints run by the thread (about 1,000 WAL pages, where
SQLite's own automatic checkpoint would run)."""


@dataclass(slots=True)
class _Job(Generic[T]):
    work: Work[T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T] = field(repr=False)


_STOP: Any = object()
_CHECKPOINT: Any = object()
_BUSY: Any = object()


class SqliteWriter:
    """The writer of one SQLite database file — an inline connection and a thread with its
    own — see the module docstring. The thread starts when it is first needed and ends with
    :meth:`close`."""

    def __init__(self, path: str, *, inline: bool = True) -> None:
        self.path = path
        self.inline = inline
        """Whether :meth:`run` may commit on the caller's thread when the lock is free."""
        self._jobs: queue.SimpleQueue[_Job[Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._inline_lock = threading.Lock()
        self._inline_db: sqlite3.Connection | None = None
        self._inline_commits = 0
        self._closed = False

    async def run(self, work: Work[T]) -> T:
        """Run ``work`` in a committed transaction; its result once the commit returned."""
        if self.inline and self._inline_lock.acquire(blocking=False):
            try:
                done = self._run_inline(work)
            finally:
                self._inline_lock.release()
            if done is not _BUSY:
                return cast(T, done)
        return await self.submit(work)

    def submit(self, work: Work[T]) -> asyncio.Future[T]:
        """Queue ``work`` now; the future settles once its transaction committed (or failed)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        # Under the lock: a work queued here always comes before close's stop marker.
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the writer of {self.path!r} is closed; open the store again")
            self._start()
            self._jobs.put(_Job(work, loop, future))
        return future

    def close(self) -> None:
        """Commit what is queued, then end the thread and close the connections."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            if thread is not None:
                self._jobs.put(_STOP)
        if thread is not None:
            thread.join()
        with self._inline_lock:
            if self._inline_db is not None:
                self._inline_db.close()
                self._inline_db = None

    async def aclose(self) -> None:
        """:meth:`close` without holding up the event loop."""
        await asyncio.to_thread(self.close)

    def _run_inline(self, work: Work[T]) -> T | Any:
        """``work`` committed on this thread, or ``_BUSY`` when the lock is not free now."""
        if self._closed:
            raise RuntimeError(f"the writer of {self.path!r} is closed; open the store again")
        db = self._inline_db
        if db is None:
            db = self._inline_db = _connect(self.path, busy_timeout_ms=0, checkpoints=False)
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" in str(error).lower():
                return _BUSY  # the thread waits for it instead of this event loop
            raise
        try:
            result = work(db)
            db.execute("COMMIT")
        except BaseException:
            db.rollback()
            raise
        self._inline_commits += 1
        if self._inline_commits >= CHECKPOINT_EVERY:
            self._inline_commits = 0
            with self._lock:
                if not self._closed:
                    self._start()
                    self._jobs.put(_CHECKPOINT)
        return result

    def _start(self) -> None:
        """Start the thread if it is not running (called with ``_lock`` held)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name=f"corral-writer:{self.path}", daemon=True
            )
            self._thread.start()

    def _serve(self) -> None:
        db = _connect(self.path, busy_timeout_ms=BUSY_TIMEOUT_MS, checkpoints=True)
        try:
            while True:
                batch = [self._jobs.get()]
                while len(batch) < BATCH:
                    try:
                        batch.append(self._jobs.get_nowait())
                    except queue.Empty:
                        break
                if not _handle(db, batch):
                    return
        finally:
            db.close()


def _handle(db: sqlite3.Connection, batch: list[Any]) -> bool:
    """Handle ``batch`` in queue order: runs of works share a transaction, the markers between
    them take their turn. False once the stop marker came."""
    go_on = True
    works: list[_Job[Any]] = []
    for item in batch:
        if isinstance(item, _Job):
            works.append(item)
            continue
        if works:
            _commit(db, works)
            works = []
        if item is _CHECKPOINT:
            _checkpoint(db)
        elif item is _STOP:
            go_on = False
    if works:
        _commit(db, works)
    return go_on


def _connect(path: str, *, busy_timeout_ms: int, checkpoints: bool) -> sqlite3.Connection:
    # Autocommit mode: the writer says where its transactions begin and end.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    if not checkpoints:  # a checkpoint writes the database file and syncs it: not inline
        db.execute("PRAGMA wal_autocheckpoint=0")
    return db


def _checkpoint(db: sqlite3.Connection) -> None:
    try:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:  # a later one, or the engine's own, catches up
        pass


def _commit(db: sqlite3.Connection, jobs: list[_Job[Any]]) -> None:
    outcomes: list[tuple[bool, Any]] = []
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            if len(jobs) == 1:
                outcomes.append((True, jobs[0].work(db)))
            else:
                outcomes.extend(_each_in_a_savepoint(db, jobs))
            db.execute("COMMIT")
        except BaseException:
            db.rollback()
            raise
    except Exception as error:  # the transaction failed: nothing of it is stored
        outcomes = [(False, error)] * len(jobs)
    for job, (ok, value) in zip(jobs, outcomes, strict=True):
        _resolve(job, ok, value)


def _each_in_a_savepoint(db: sqlite3.Connection, jobs: list[_Job[Any]]) -> list[tuple[bool, Any]]:
    outcomes: list[tuple[bool, Any]] = []
    for job in jobs:
        db.execute("SAVEPOINT work")
        try:
            outcomes.append((True, job.work(db)))
        except Exception as error:
            db.execute("ROLLBACK TO work")
            outcomes.append((False, error))
        db.execute("RELEASE work")
    return outcomes


def _resolve(job: _Job[Any], ok: bool, value: Any) -> None:
    def settle() -> None:
        if job.future.done():  # the caller was cancelled; the write stands regardless
            return
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)

    try:
        job.loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the caller's event loop closed while the work ran
        pass


def open_writer(engine: AsyncEngine) -> SqliteWriter | PgWriter | None:
    """The writer for ``engine``'s database: a thread for a SQLite file, a kept connection
    for PostgreSQL, None otherwise (SQLite in memory)."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        return PgWriter(engine)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return SqliteWriter(url.database)
