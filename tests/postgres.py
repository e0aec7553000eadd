"""A real PostgreSQL server for the test session, a fresh database per test or module.

Imported by ``tests/conftest.py``, so every test folder can ask for ``postgres`` (the
server's socket folder), ``database_url`` (a new database for one test) or
:func:`new_database` (for a module- or session-scoped fixture).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["database_url", "new_database", "postgres", "throwaway_server"]


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None
    )
    if found is None:
        raise FileNotFoundError(
            f"PostgreSQL's {name} is not installed; `scripts/setup --test` installs it"
        )
    return found


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; run them as the postgres account.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def throwaway_server() -> Iterator[str]:
    """A PostgreSQL server of its own (trust auth, no fsync) while inside; yields the
    folder of its socket. Raises FileNotFoundError when PostgreSQL is not installed."""
    # Not under pytest's tmp folder: that one is private to root, and the server runs as
    # the postgres account.
    root = Path(tempfile.mkdtemp(prefix="corral-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    data = root / "data"
    try:
        subprocess.run(
            _as_postgres([_pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "corral"]),
            check=True,
            capture_output=True,
        )
        options = f"-k {root} -c listen_addresses='' -p 5432 -c fsync=off"
        start = [_pg_bin("pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log")]
        subprocess.run(_as_postgres([*start, "-w", "start"]), check=True, capture_output=True)
        yield str(root)
    finally:
        if data.exists():
            subprocess.run(
                _as_postgres([_pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                capture_output=True,
            )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    try:
        with throwaway_server() as root:
            yield root
    except FileNotFoundError as missing:
        pytest.fail(str(missing))


def new_database(postgres: str) -> str:
    """Create an empty database on the session's server; its ``postgresql+asyncpg`` URL."""
    name = "t_" + uuid.uuid4().hex[:12]
    subprocess.run(
        [_pg_bin("createdb"), "-h", postgres, "-U", "corral", name],
        check=True,
        capture_output=True,
    )
    return f"postgresql+asyncpg://corral@/{name}?host={postgres}&port=5432"


@pytest.fixture
def database_url(postgres: str) -> str:
    return new_database(postgres)
