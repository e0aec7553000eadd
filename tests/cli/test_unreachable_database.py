"""A database that cannot be reached is a clear error naming it and what to check, from
every command that opens it, never a traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
import pytest

UNREACHABLE = "postgresql+asyncpg://corral:secret@127.0.0.1:1/corral"  # nothing listens on 1


@pytest.mark.parametrize(
    "command", [["approvals", "list"], ["worker"], ["serve", "--port", "0"]], ids=" ".join
)
def test_an_unreachable_database_is_a_clear_error(tmp_path: Path, command: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DATABASE_URL"] = UNREACHABLE
    done = subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(tmp_path / "data"), *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot reach the database postgresql+asyncpg://corral:***@127.0.0.1:1/corral" in (
        " ".join(done.stderr.split())
    )
    assert "Check database_url" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr and "secret" not in done.stderr


def test_a_server_with_no_connection_left_is_a_clear_error(postgres: str, tmp_path: Path) -> None:
    # The first connection is let in, the next ones (the live events' listener) are
    # refused, as on a server the cluster's workers fill: "too many connections".
    role = "limited_" + uuid.uuid4().hex[:8]
    database = "t_" + uuid.uuid4().hex[:12]
    asyncio.run(
        _as_admin(
            postgres,
            f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 1",
            f"CREATE DATABASE {database} OWNER {role}",
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DATABASE_URL"] = (
        f"postgresql+asyncpg://{role}@/{database}?host={postgres}&port=5432"
    )
    done = subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(tmp_path / "data"), "approvals", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"cannot reach the database postgresql+asyncpg://{role}@/{database}" in said
    assert "too many connections" in said and "max_connections" in said


async def _as_admin(postgres: str, *statements: str) -> None:
    connection = await asyncpg.connect(host=postgres, user="corral", database="postgres")
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()
