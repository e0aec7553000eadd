"""The hot writes on PostgreSQL: one statement, one round trip, on a connection kept for it.

Through SQLAlchemy an append on PostgreSQL costs four round trips — the pool's pre-ping,
``BEGIN``, the ``INSERT``, ``COMMIT`` — and about eight times a bare asyncpg insert. The
writer keeps one connection of the engine's pool checked out and sends each write as a
single statement outside a transaction block, which PostgreSQL commits on its own: durable
when the answer arrives, one round trip once asyncpg has the statement prepared (it keeps
a cache of them per connection). Callers write statements that read and write in one
(``INSERT … SELECT … RETURNING``) and retry on a unique violation, as another process may
have taken the same number between the read and the write.

Writes take turns on the one connection (an asyncpg connection runs one query at a time).
A connection that broke is dropped and the next write takes a fresh one. The write itself is
tried again only when it cannot have reached the server (the server had already ended the
session, or the client found the connection unusable before sending); when the connection
died with the statement in flight its outcome is unknown, and the error goes to the caller
— never acknowledged, never written twice.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["KeyTaken", "MissingReference", "PgWriter"]


class KeyTaken(Exception):
    """A unique key the statement wrote was taken meanwhile (by another process): retry."""


class MissingReference(Exception):
    """A row the statement's rows refer to (a foreign key) does not exist."""


@functools.cache
def _driver() -> Any:
    # asyncpg loads with the first write to PostgreSQL, not with every open of SQLite.
    import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information

    return asyncpg


class PgWriter:
    """One kept connection of ``engine`` for single-statement writes; see the module
    docstring. The connection is checked out at the first write and returned by
    :meth:`aclose`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._connection: AsyncConnection | None = None
        self._driver: Any = None
        self._turn = asyncio.Lock()
        self._closed = False

    async def fetch(self, sql: str, *arguments: Any) -> Sequence[Any]:
        """Run ``sql`` (``$1``… placeholders) as its own transaction; its rows once committed."""
        asyncpg = _driver()
        not_sent = (
            asyncpg.AdminShutdownError,  # the server ended the session before reading it
            asyncpg.InterfaceError,  # the client refused to send on a connection it knows broken
            asyncpg.InternalClientError,
        )
        in_flight = (asyncpg.ConnectionDoesNotExistError, OSError)
        async with self._turn:
            for attempt in range(2):
                driver = await self._driver_connection()
                try:
                    return list(await driver.fetch(sql, *arguments))
                except asyncpg.UniqueViolationError as error:
                    raise KeyTaken(str(error)) from error
                except asyncpg.ForeignKeyViolationError as error:
                    raise MissingReference(str(error)) from error
                except not_sent:
                    await self._drop()
                    if attempt == 1:
                        raise
                except in_flight:
                    await self._drop()
                    raise
            raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Return the connection to the pool; later writes are refused."""
        async with self._turn:
            self._closed = True
            if self._connection is not None:
                await self._connection.close()
                self._connection = self._driver = None

    async def _driver_connection(self) -> Any:
        if self._closed:
            raise RuntimeError("the store's PostgreSQL writer is closed; open the store again")
        if self._driver is None:
            connection = await self._engine.connect()
            raw = await connection.get_raw_connection()
            self._connection, self._driver = connection, raw.driver_connection
        return self._driver

    async def _drop(self) -> None:
        connection, self._connection, self._driver = self._connection, None, None
        if connection is not None:
            try:
                await connection.invalidate()
            except Exception:  # it is gone either way
                pass
