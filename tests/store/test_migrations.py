"""The schema comes from Alembic migrations and matches the table definitions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from corral.platform import Platform
from corral.store.engine import make_engine
from corral.store.migrate import HEAD, alembic_config, stored_revisions, upgrade
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


def test_the_head_kept_in_code_is_the_newest_migration() -> None:
    """Opening skips Alembic when the database records HEAD, so HEAD must follow each new
    migration: a stale HEAD would leave databases at the one before unmigrated."""
    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [HEAD]


def _database_in(folder: Path) -> str:
    folder.mkdir(parents=True)
    return f"sqlite+aiosqlite:///{folder / 'corral.db'}"


async def test_a_database_behind_the_head_is_migrated_on_open(data_dir: Path) -> None:
    import corral

    engine = make_engine(_database_in(data_dir))
    try:
        await upgrade(engine, "0027_credential_injection")
        assert await stored_revisions(engine) == {"0027_credential_injection"}
    finally:
        await engine.dispose()
    async with corral.open(data_dir) as platform:
        assert await stored_revisions(platform.engine) == {HEAD}
        async with platform.engine.connect() as connection:
            columns = await connection.exec_driver_sql("PRAGMA table_info(runs)")
            assert "trace_parent" in {row[1] for row in columns}
