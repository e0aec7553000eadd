"""Bring a database to the newest schema with Alembic.

Every open of the platform calls :func:`upgrade`; almost always the database is already at
the newest revision. That is checked with one query against :data:`HEAD`, and Alembic (a
tenth of a second of imports, more with its migration scripts) loads only when a migration
is due. A test holds :data:`HEAD` to the head of the migrations folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["HEAD", "alembic_config", "stored_revisions", "upgrade"]

HEAD = "0031_trace_spans"
"""The newest migration's revision id; a new migration updates it (a test checks)."""

_MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def stored_revisions(engine: AsyncEngine) -> set[str]:
    """The revisions the database records (empty: never migrated)."""
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(text("SELECT version_num FROM alembic_version"))
            return {row[0] for row in rows}
    except DBAPIError:
        return set()  # no alembic_version table yet


async def upgrade(engine: AsyncEngine, revision: str = "heads") -> None:
    """Apply every migration up to ``revision`` (all heads by default) in one transaction."""
    if revision == "heads" and await stored_revisions(engine) == {HEAD}:
        return

    def _upgrade(connection: Connection) -> None:
        from alembic import command

        command.upgrade(alembic_config(connection), revision)

    async with engine.begin() as connection:
        await connection.run_sync(_upgrade)
