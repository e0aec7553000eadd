"""A database that cannot be reached is a clear error naming it and what to check, from
every command that opens it, never a traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

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
    role, database = _limited_role(postgres, 1)
    env = _env_for(postgres, role, database)
    env["CORRAL_DATABASE_FULL_WAIT_SECONDS"] = "0"
    done = subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(tmp_path / "data"), "approvals", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "waiting" not in said
    assert f"cannot reach the database postgresql+asyncpg://{role}@/{database}" in said
    assert "too many connections" in said and "max_connections" in said


def test_a_command_waits_for_a_connection_slot_to_free(postgres: str, tmp_path: Path) -> None:
    # Other clients (here the test) hold every slot the role has when the command starts;
    # it says it waits, and once they let go it runs.
    slots = 10
    role, database = _limited_role(postgres, slots)
    loop = asyncio.new_event_loop()
    held = loop.run_until_complete(_connect(postgres, role, database, slots))
    command = [sys.executable, "-m", "corral", "--data-dir", str(tmp_path / "data")]
    process = subprocess.Popen(
        [*command, "approvals", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env_for(postgres, role, database),
    )
    try:
        assert process.stderr is not None
        waiting = ""
        for line in process.stderr:
            waiting += line
            if "for one to free" in line:
                break
        assert "no connection left; waiting up to 30 s" in " ".join(waiting.split()), waiting
    finally:
        loop.run_until_complete(_close(held))
        loop.close()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, waiting + err
    assert "Traceback" not in err and "no pending approvals" in out


def _limited_role(postgres: str, limit: int) -> tuple[str, str]:
    """A new role allowed ``limit`` connections, and a new database it owns."""
    role = "limited_" + uuid.uuid4().hex[:8]
    database = "t_" + uuid.uuid4().hex[:12]
    asyncio.run(
        _as_admin(
            postgres,
            f"CREATE ROLE {role} LOGIN CONNECTION LIMIT {limit}",
            f"CREATE DATABASE {database} OWNER {role}",
        )
    )
    return role, database


async def _connect(postgres: str, role: str, database: str, count: int) -> list[Any]:
    return list(
        await asyncio.gather(
            *(asyncpg.connect(host=postgres, user=role, database=database) for _ in range(count))
        )
    )


async def _close(connections: list[Any]) -> None:
    await asyncio.gather(*(connection.close() for connection in connections))


def _env_for(postgres: str, role: str, database: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DATABASE_URL"] = (
        f"postgresql+asyncpg://{role}@/{database}?host={postgres}&port=5432"
    )
    return env


async def _as_admin(postgres: str, *statements: str) -> None:
    connection = await asyncpg.connect(host=postgres, user="corral", database="postgres")
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()
