"""The same platform on PostgreSQL: a real server started for this test session."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import corral
from tests.conftest import DEMO


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None
    )
    if found is None:
        pytest.fail(f"PostgreSQL's {name} is not installed; `scripts/setup --test` installs it")
    return found


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; run them as the postgres account.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    # Not under pytest's tmp folder: that one is private to root, and the server runs as
    # the postgres account.
    root = Path(tempfile.mkdtemp(prefix="corral-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    data = root / "data"
    subprocess.run(
        _as_postgres([_pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "corral"]),
        check=True,
        capture_output=True,
    )
    options = f"-k {root} -c listen_addresses='' -p 5432 -c fsync=off"
    subprocess.run(
        _as_postgres(
            [
                _pg_bin("pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield str(root)
    finally:
        subprocess.run(
            _as_postgres([_pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def database_url(postgres: str) -> str:
    name = "t_" + uuid.uuid4().hex[:12]
    subprocess.run(
        [_pg_bin("createdb"), "-h", postgres, "-U", "corral", name],
        check=True,
        capture_output=True,
    )
    return f"postgresql+asyncpg://corral@/{name}?host={postgres}&port=5432"


async def test_platform_runs_on_postgresql(data_dir: Path, database_url: str) -> None:
    async with corral.open(data_dir, database_url=database_url, package_paths=[DEMO]) as first:
        assert (await first.caller()).role == "owner"
        assert not (data_dir / "corral.db").exists()
        result = await first.call_tool("echo", {"text": "on postgres"})
        assert result.text == "on postgres"
        parked = await first.call_tool("write_note", {"path": "pg.md", "text": "x"}, profile="safe")
        approval_id = parked.data["approval_id"]  # type: ignore[index]
        await first.admin.set_live("perf_slow_tool_ms", 4321)
    async with corral.open(data_dir, database_url=database_url, package_paths=[DEMO]) as second:
        assert (await second.live_settings())["perf_slow_tool_ms"] == 4321
        approved = await second.decide_approval(approval_id, "approve")
        assert not approved.is_error
    assert (data_dir / "drive" / "pg.md").read_text() == "note:x"


async def test_live_settings_cross_instances_on_postgresql(
    data_dir: Path, database_url: str
) -> None:
    async with (
        corral.open(data_dir, database_url=database_url, live_refresh_seconds=0) as writer,
        corral.open(data_dir, database_url=database_url, live_refresh_seconds=0) as reader,
    ):
        await writer.admin.set_live("tool_result_content_cap", 9999)
        assert (await reader.live_settings())["tool_result_content_cap"] == 9999
