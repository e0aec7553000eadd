"""The cluster's sweep forgets SIGKILLed workers and drops waiting jobs of ended runs; the
engine's queries commit themselves, so a frozen worker holds no lock the sweep waits on."""

from __future__ import annotations

from psycopg.pq import TransactionStatus
from sqlalchemy import text

import corral
from corral.runtime.cluster import ProcrastinateJobs
from corral.runtime.cluster.engine_jobs import Swept
from tests.runtime.cluster.conftest import Cluster, eventually


async def test_the_sweep_removes_a_dead_worker_and_an_ended_runs_waiting_job(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    model = cluster.script({"text": "Done."})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        assert isinstance(rt.jobs, ProcrastinateJobs)
        jobs = rt.jobs
        worker = cluster.start_worker()
        done = await rt.chat("answer", model=model)
        assert done.status == "finished", cluster.logs()

        async def registered() -> int | None:
            count = await _scalar(platform, "SELECT count(*) FROM procrastinate_workers")
            return count or None

        assert await eventually(registered) == 1
        worker.kill()
        worker.wait()
        await jobs.defer(done.run_id)  # a job left waiting for a run that already ended
        # The run's own jobs: the killed worker may leave a periodic sweep job of its own
        # waiting, which a sweep hands back as it does any dead worker's job.
        waiting = (
            "SELECT count(*) FROM procrastinate_jobs "
            f"WHERE status = 'todo' AND lock = 'run:{done.run_id}'"
        )
        assert await _scalar(platform, waiting) == 1

        assert (await jobs.sweep()).dropped == 1
        assert await _scalar(platform, waiting) == 0

        async def pruned() -> Swept | None:
            swept = await jobs.sweep()
            return swept if swept.pruned_workers else None

        # Once its last heartbeat is worker_stalled_seconds old.
        assert (await eventually(pruned, within=30)).pruned_workers == 1
        assert await _scalar(platform, "SELECT count(*) FROM procrastinate_workers") == 0
        assert await _scalar(platform, waiting) == 0
        assert (await rt.runs.get(done.run_id)).status == "finished"


async def test_each_engine_query_commits_itself(cluster: Cluster) -> None:
    # Committed by the pool after the query instead, a worker frozen between the two (SIGSTOP,
    # a paused VM) would keep the rows it touched locked: a finished job's row, which the
    # live workers' sweep then waits on forever to hand the dead worker's jobs back.
    async with corral.open(cluster.data_dir) as platform:
        jobs = platform.runtime.jobs
        assert isinstance(jobs, ProcrastinateJobs)
        async with jobs.app.connector.pool.connection() as connection:  # type: ignore[attr-defined]
            await connection.execute("SELECT 1")
            assert connection.info.transaction_status == TransactionStatus.IDLE


async def _scalar(platform: corral.Platform, sql: str) -> int:
    async with platform.kernel.sessions() as session:
        return int(await session.scalar(text(sql)) or 0)
