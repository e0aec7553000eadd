"""Telling a database outage from every other error: :func:`database_unavailable`.

A run that fails because its database connection was lost (the server restarted, a backend
was terminated, "too many clients") did nothing wrong: on a cluster it is handed back and
retried instead of ending ``failed``. Errors of the run's own making (a tool, the model, a
constraint it broke) are not outages.
"""

from __future__ import annotations

import sys

from sqlalchemy import exc as sa_exc

__all__ = ["database_unavailable", "server_full"]

_OUTAGE_SQLSTATES = ("08", "53", "57P")
"""SQLSTATE classes of an outage: connection exception, insufficient resources (too many
connections, out of memory or disk), operator intervention (shutdown, terminated backend)."""

_CLOSED_DATABASE = "is not currently accepting connections"
"""The refusal of a database an operator closed (ALLOW_CONNECTIONS false); its SQLSTATE,
55000, also names errors of a statement's own making."""

_OUTAGE_TYPES: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,  # no pooled connection came free in time
)

_DRIVER_OUTAGE_TYPES = {
    "asyncpg": ("InterfaceError", "PostgresConnectionError"),  # "connection is closed"
    "psycopg": ("OperationalError", "InterfaceError"),
}
"""The PostgreSQL drivers' own outage errors, by module. Read from ``sys.modules`` rather than
imported: a driver's error exists only once the driver is loaded, and importing both costs
every command on SQLite a quarter of a second."""


def _outage_types() -> tuple[type[BaseException], ...]:
    found = list(_OUTAGE_TYPES)
    for module, names in _DRIVER_OUTAGE_TYPES.items():
        driver = sys.modules.get(module)
        if driver is not None:
            found.extend(getattr(driver, name) for name in names)
    return tuple(found)


_TOO_MANY_CONNECTIONS = "53300"
"""The server's refusal of one more connection (max_connections, or a role's or a database's
connection limit): a slot frees when another client lets go."""


def server_full(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is the server refusing one more connection."""
    return any(
        getattr(cause, "sqlstate", None) == _TOO_MANY_CONNECTIONS for cause in _causes(error)
    )


def _causes(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        if isinstance(current, sa_exc.DBAPIError) and current.orig is not None:
            current = current.orig
        else:
            current = current.__cause__ or current.__context__
    return seen


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says the database could not be reached or used."""
    outage_types = _outage_types()
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, outage_types):
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        sqlstate = getattr(current, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_OUTAGE_SQLSTATES):
            return True
        if sqlstate == "55000" and _CLOSED_DATABASE in str(current):
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.orig is not None:
            current = current.orig
        else:
            current = current.__cause__ or current.__context__
    return False
