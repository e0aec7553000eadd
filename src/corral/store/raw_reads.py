"""Bulk reads straight from the driver, for the few reads where SQLAlchemy's row processing
is most of the cost (a cold prompt reads tens of thousands of timeline rows).

On SQLite the whole result comes back in one thread hop of aiosqlite, as plain tuples with
the driver's own values (JSON as text, times as ISO strings); callers decode only what they
use. Elsewhere :func:`fetch_all` answers None and callers take their SQLAlchemy query.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["fetch_all"]


async def fetch_all(
    session: AsyncSession, sql: str, parameters: tuple[Any, ...]
) -> list[tuple[Any, ...]] | None:
    """Every row of ``sql`` (``?`` placeholders) from the driver, or None when the
    database is not SQLite."""
    connection = await session.connection()
    if connection.dialect.name != "sqlite":
        return None
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    return list(await driver.execute_fetchall(sql, parameters))
