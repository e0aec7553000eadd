"""Engine and session factory: SQLite in WAL mode by default, PostgreSQL by URL."""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from corral.errors import ConfigError
from corral.store.connection_budget import ENGINE_POOL_OVERFLOW, ENGINE_POOL_SIZE
from corral.store.outages import server_full
from corral.store.sqlite_connection import connect_sqlite

__all__ = [
    "IDLE_IN_TRANSACTION_SECONDS",
    "DatabaseFull",
    "check_reachable",
    "make_engine",
    "make_sessionmaker",
    "unreachable",
]


class DatabaseFull(ConfigError):
    """The database server refused a connection for want of a free slot: other clients hold
    every one it allows. It passes when one lets go (see ``database_full_wait_seconds``)."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


IDLE_IN_TRANSACTION_SECONDS = 30.0
"""How long PostgreSQL lets one of our sessions sit idle inside a transaction before it ends
that session. Our transactions wait on nothing but the database, so one idle this long
belongs to a process that froze (SIGSTOP, a paused VM) while holding row locks, which would
otherwise keep every other worker from its rows (a run's row, a conversation's appends, and
so from taking its runs over) for as long as it stays frozen."""


def _limit_idle_transactions(milliseconds: int, dbapi_connection: Any, _record: Any) -> None:
    # A SET on each new connection rather than a startup parameter, which connection
    # poolers in front of PostgreSQL (PgBouncer) refuse unless told to ignore it. Sent on
    # the driver's own connection: through the adapter's cursor it would open a transaction
    # that the store's writer (which keeps a connection for statements outside any
    # transaction) would then never commit.
    statement = f"SET idle_in_transaction_session_timeout = {milliseconds}"
    dbapi_connection.run_async(lambda driver: driver.execute(statement))


def make_engine(
    url: str, *, idle_in_transaction_seconds: float = IDLE_IN_TRANSACTION_SECONDS
) -> AsyncEngine:
    if url.startswith("sqlite"):
        # What SQLAlchemy's aiosqlite dialect would pass, through our connection class.
        database = make_url(url).database or ":memory:"
        engine = create_async_engine(
            url,
            async_creator=partial(connect_sqlite, database, timeout=10, check_same_thread=False),
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    engine = create_async_engine(
        url, pool_pre_ping=True, pool_size=ENGINE_POOL_SIZE, max_overflow=ENGINE_POOL_OVERFLOW
    )
    if engine.dialect.name == "postgresql":
        limit = partial(_limit_idle_transactions, round(idle_in_transaction_seconds * 1000))
        event.listen(engine.sync_engine, "connect", limit)
    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[Any]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def check_reachable(engine: AsyncEngine) -> None:
    """Connect once; a server that cannot be reached (down, wrong host or port, refused
    credentials, no such database) is a ConfigError saying which and what to check."""
    if engine.dialect.name != "postgresql":
        return
    try:
        async with engine.connect():
            pass
    except (OSError, DBAPIError) as exc:
        raise unreachable(engine, exc) from None


def unreachable(engine: AsyncEngine, exc: BaseException) -> ConfigError:
    """The error of a database ``engine`` could not reach or use, saying what to check."""
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    reason = str(cause).strip().splitlines()
    said = reason[0] if reason else type(exc).__name__
    where = engine.url.render_as_string(hide_password=True)
    message = (
        f"cannot reach the database {where}: {said}. Check database_url (corral.toml or "
        "CORRAL_DATABASE_URL), that the server runs and accepts this user, and that the "
        "database exists (createdb)."
    )
    if server_full(exc):
        return DatabaseFull(
            f"{message} The server has no connection left: the processes using it hold every "
            "one it allows (`corral doctor` prints their budget beside max_connections); stop "
            "some or raise max_connections."
        )
    return ConfigError(message)
