"""A database that cannot be reached is a clear error naming it and what to check, from
every command that opens it, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
