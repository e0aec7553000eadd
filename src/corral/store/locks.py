"""Named locks that hold across every process on the database: one holder at a time.

On PostgreSQL a session-level advisory lock on its own connection, so a check and the
write it allows (count the background runs in flight, then start one) happen as one step
on every worker of a cluster. On SQLite, whose single writer is one machine's, an asyncio
lock per name in this process does the same.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["held_lock"]

_local: dict[str, asyncio.Lock] = {}


def _key(name: str) -> int:
    """A stable signed 64-bit key for ``name`` (advisory locks take a bigint)."""
    return int.from_bytes(
        hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True
    )


@asynccontextmanager
async def held_lock(engine: AsyncEngine, name: str) -> AsyncIterator[None]:
    """Hold the lock ``name`` while inside; wait for it when another holder has it."""
    if engine.dialect.name != "postgresql":
        lock = _local.setdefault(name, asyncio.Lock())
        async with lock:
            yield
        return
    key = _key(name)
    async with engine.connect() as connection:
        await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        await connection.commit()
        try:
            yield
        finally:
            await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            await connection.commit()
