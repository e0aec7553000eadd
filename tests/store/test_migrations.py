"""The schema comes from Alembic migrations and matches the table definitions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from corral.platform import Platform
from corral.store.migrate import alembic_config
from corral.store.schema import metadata


async def test_migrations_match_the_models(platform: Platform) -> None:
    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, metadata))

    async with platform.engine.connect() as connection:
        assert await connection.run_sync(diff) == []


async def test_sqlite_runs_in_wal_mode_with_foreign_keys(
    platform: Platform, data_dir: Path
) -> None:
    with sqlite3.connect(data_dir / "corral.db") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = {row[0] for row in raw.execute("SELECT version_num FROM alembic_version")}
    heads = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    assert versions == heads and "0001" not in heads
    async with platform.engine.connect() as connection:
        result = await connection.exec_driver_sql("PRAGMA foreign_keys")
        assert result.scalar() == 1


async def test_reopening_keeps_data_and_does_not_reseed(data_dir: Path) -> None:
    import corral

    async with corral.open(data_dir) as first:
        await first.identity.create_user("zoe", "member")
        await first.admin.remove_source("sys-opt")
    async with corral.open(data_dir) as second:
        assert (await second.caller("zoe")).role == "member"
        policy = (await second.config.dispatch_state()).sources
        assert policy.source("sys-opt") is None and policy.source("data") is not None
