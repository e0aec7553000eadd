"""The data folder a cluster's database serves: a worker from another folder refuses to
start, naming both; a CLI command about to create a SQLite database in a folder the cluster
claimed warns (its shell most likely lacks the cluster's database URL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import corral
from tests.runtime.cluster.conftest import Cluster


def _corral(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


async def test_a_worker_from_another_data_folder_refuses_to_start(own_cluster: Cluster) -> None:
    cluster = own_cluster
    async with corral.open(cluster.data_dir):
        pass  # the first cluster process records its data folder
    other = cluster.root / "elsewhere"
    other.mkdir()
    (other / "corral.toml").write_text((cluster.data_dir / "corral.toml").read_text())
    done = _corral(other, "worker")
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert f"uses the data folder {other}" in said
    assert f"serves {cluster.data_dir}" in said
    assert f"--data-dir {cluster.data_dir}" in said
    assert "Traceback" not in done.stderr


async def test_a_cli_command_warns_before_a_new_sqlite_database_beside_a_cluster(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    async with corral.open(cluster.data_dir):
        pass
    # As in a shell where only CORRAL_DATABASE_URL pointed at the cluster.
    (cluster.data_dir / "corral.toml").write_text("")
    done = _corral(cluster.data_dir, "approvals", "list")
    said = " ".join(done.stderr.split())
    assert done.returncode == 0, done.stderr
    assert f"creating a new SQLite database {cluster.data_dir / 'corral.db'}" in said
    assert "belongs to the cluster on postgresql+asyncpg://" in said
    again = _corral(cluster.data_dir, "approvals", "list")
    assert "warning" not in again.stderr  # the database exists now: nothing new is created
