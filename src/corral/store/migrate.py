"""Bring a database to the newest schema with Alembic."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["alembic_config", "upgrade"]

_MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def upgrade(engine: AsyncEngine, revision: str = "heads") -> None:
    """Apply every migration up to ``revision`` (all heads by default) in one transaction."""

    def _upgrade(connection: Connection) -> None:
        command.upgrade(alembic_config(connection), revision)

    async with engine.begin() as connection:
        await connection.run_sync(_upgrade)
