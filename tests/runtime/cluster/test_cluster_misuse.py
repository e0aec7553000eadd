"""Asking for a cluster where none can be gives a clear error, and the embedded default
stays what it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import corral
from corral.errors import ConfigError
from corral.runtime.jobs import LocalJobs
from corral.settings import load_settings


async def test_cluster_jobs_on_sqlite_are_refused_with_what_to_do(data_dir: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        async with corral.open(data_dir, run_jobs="cluster"):
            pass
    assert "needs PostgreSQL, not 'sqlite'" in str(raised.value)
    assert "run_jobs = 'local'" in str(raised.value)


async def test_the_embedded_default_keeps_running_runs_in_process(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert isinstance(platform.runtime.jobs, LocalJobs)
        assert not platform.runtime.jobs.distributed
    assert load_settings(data_dir).hosted_run_jobs == "local"
    postgres = load_settings(data_dir, database_url="postgresql+asyncpg://u@h/db")
    assert postgres.hosted_run_jobs == "cluster"
    assert (
        load_settings(data_dir, database_url=postgres.database_url, run_jobs="local")
    ).hosted_run_jobs == "local"


def test_a_sweep_period_must_divide_a_minute(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="cluster_sweep_seconds must divide 60"):
        load_settings(data_dir, cluster_sweep_seconds=7)


def test_corral_worker_on_the_embedded_default_says_what_it_needs(data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    done = subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(data_dir), "worker"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2
    assert "a worker needs a PostgreSQL database_url" in done.stderr
    assert "Traceback" not in done.stderr
