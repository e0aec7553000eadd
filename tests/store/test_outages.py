"""A database outage is told from errors of a run's own making."""

from __future__ import annotations

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
import psycopg
import pytest
from sqlalchemy import exc as sa_exc

from corral.errors import ToolError
from corral.store.outages import database_unavailable


def _wrapped(orig: BaseException) -> sa_exc.DBAPIError:
    """As SQLAlchemy raises a driver's error (asyncpg's land as the generic DBAPIError)."""
    return sa_exc.DBAPIError("SELECT 1", None, orig)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(asyncpg.AdminShutdownError("terminating connection")),
        _wrapped(asyncpg.TooManyConnectionsError("sorry, too many clients already")),
        _wrapped(asyncpg.ConnectionDoesNotExistError("connection was closed")),
        _wrapped(
            asyncpg.ObjectNotInPrerequisiteStateError(
                'database "x" is not currently accepting connections'
            )
        ),
        sa_exc.OperationalError("SELECT 1", None, Exception("server closed the connection")),
        psycopg.OperationalError("connection failed"),
        asyncpg.InterfaceError("connection is closed"),
    ],
)
def test_lost_connections_and_exhausted_servers_are_outages(error: BaseException) -> None:
    assert database_unavailable(error)


def test_an_outage_found_as_the_cause_counts() -> None:
    try:
        try:
            raise psycopg.OperationalError("connection failed")
        except psycopg.OperationalError as cause:
            raise RuntimeError("Database error.") from cause
    except RuntimeError as error:
        assert database_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(asyncpg.UniqueViolationError("duplicate key")),
        _wrapped(asyncpg.ObjectNotInPrerequisiteStateError("cannot refresh")),
        sa_exc.IntegrityError("INSERT", None, Exception("UNIQUE constraint failed")),
        ToolError("the tool failed"),
        ValueError("bad input"),
    ],
)
def test_errors_of_the_runs_own_making_are_not(error: BaseException) -> None:
    assert not database_unavailable(error)
