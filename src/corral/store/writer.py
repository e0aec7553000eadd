"""One writer per SQLite database: a thread that owns a ``sqlite3`` connection and commits
the hot writes (timeline appends), one thread hop per transaction.

Through aiosqlite and SQLAlchemy a one-row append takes about eleven thread hops and costs
ten times a raw insert and commit. Here a caller hands the writer a *work* — a plain function
of the connection — and awaits one future; the thread runs it inside ``BEGIN IMMEDIATE`` …
``COMMIT`` and wakes the caller once. Works that arrive while a transaction commits are run
together in the next one (each in its own savepoint, so one failure fails only its own
caller): concurrent appends share a commit instead of queueing for one each.

Durability is SQLite's, as configured for the engine (WAL, ``synchronous=NORMAL``): a
committed transaction survives the process being killed. A caller's future resolves only
after ``COMMIT`` returned, so whatever a caller was told is stored, is. ``BEGIN IMMEDIATE``
takes the database's write lock before the work reads anything, so a work that reads and
then writes (the next sequence number, say) never races another writer, in this process or
another; the engine's own connections wait for the lock (``busy_timeout``) as they wait for
any other process's.

Elsewhere (PostgreSQL) :func:`open_writer` answers None and callers keep their SQLAlchemy
path.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SqliteWriter", "Work", "open_writer"]

T = TypeVar("T")

Work = Callable[[sqlite3.Connection], T]
"""What a caller hands the writer: runs in the writer's thread, inside its transaction."""

BATCH = 256
"""At most this many works share one transaction."""

BUSY_TIMEOUT_MS = 10_000
"""How long a transaction waits for another connection's write lock (as the engine's do)."""


@dataclass(slots=True)
class _Job(Generic[T]):
    work: Work[T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T] = field(repr=False)


_STOP: Any = object()


class SqliteWriter:
    """The writer thread of one SQLite database file; see the module docstring.

    The thread starts with the first write and ends with :meth:`close`.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._jobs: queue.SimpleQueue[_Job[Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, work: Work[T]) -> T:
        """Run ``work`` in a committed transaction; its result once the commit returned."""
        return await self.submit(work)

    def submit(self, work: Work[T]) -> asyncio.Future[T]:
        """Queue ``work`` now; the future settles once its transaction committed (or failed)."""
        if self._closed:
            raise RuntimeError(f"the writer of {self.path!r} is closed; open the store again")
        self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Job(work, loop, future))
        return future

    def close(self) -> None:
        """Commit what is queued, then end the thread and its connection."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(_STOP)
            thread.join()

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._serve, name=f"corral-writer:{self.path}", daemon=True
                )
                self._thread.start()

    def _serve(self) -> None:
        db = _connect(self.path)
        try:
            while True:
                batch = [self._jobs.get()]
                while len(batch) < BATCH:
                    try:
                        batch.append(self._jobs.get_nowait())
                    except queue.Empty:
                        break
                stop = any(job is _STOP for job in batch)
                jobs = [job for job in batch if job is not _STOP]
                if jobs:
                    _commit(db, jobs)
                if stop:
                    return
        finally:
            db.close()


def _connect(path: str) -> sqlite3.Connection:
    # Autocommit mode: the writer says where its transactions begin and end.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return db


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


def open_writer(engine: AsyncEngine) -> SqliteWriter | None:
    """The writer for ``engine``'s database file, or None when it is not a SQLite file."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return SqliteWriter(url.database)
