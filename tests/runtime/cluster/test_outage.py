"""A run whose job meets a database outage is retried, never ended ``failed`` nor left
``running``.

While a worker's call waits at a gate, the test closes the run's database to new
connections and terminates every backend on it (the worker's included); the call then
returns into a database the worker cannot reach. Once the database is back, the run
finishes with every step stored once. And a ``running`` run whose job ended ``failed`` is
requeued by the sweep and finished by a worker."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

import corral
from corral.runtime.cluster import ProcrastinateJobs
from tests.runtime.cluster.conftest import Cluster, call, eventually, read_started

NOTICED = ("met a database outage", "lost its database", "stopped on a database failure")


def _open_gate(gate: Path) -> None:
    with gate.open("w"):
        pass


async def _admin(cluster: Cluster) -> tuple[asyncpg.Connection, str]:
    """A connection to the server's maintenance database, and the cluster's database name."""
    url = make_url(cluster.database_url)
    host = str(url.query["host"])
    connection = await asyncpg.connect(host=host, user=url.username, database="postgres")
    return connection, str(url.database)


async def test_a_run_cut_off_from_its_database_mid_call_finishes_once_it_is_back(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    started, gate = cluster.fifo("started"), cluster.fifo("gate")
    model = cluster.script(
        {"tool_calls": [call("echo", text="before")]},
        {"tool_calls": [call("checkin", fifo=str(started), gate=str(gate))]},
        {"tool_calls": [call("echo", text="after")]},
        {"text": "Done despite the outage."},
    )
    admin, name = await _admin(cluster)
    try:
        async with corral.open(cluster.data_dir) as platform:
            rt = platform.runtime
            cluster.start_worker()
            run = await rt.start_chat("check in", model=model)
            await read_started(started)
            await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
            await asyncio.to_thread(_open_gate, gate)

            async def noticed() -> bool | None:
                # The run's next write fails, or the engine's listener does first.
                logs = cluster.logs()
                return True if any(said in logs for said in NOTICED) else None

            await eventually(noticed, within=60)
            await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
            try:
                settled = await asyncio.wait_for(rt.wait_run(run.id), 120)
            except TimeoutError:
                raise AssertionError(await _state(admin, cluster, name)) from None
            rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        await admin.close()
    assert settled.status == "finished", cluster.logs()
    turns = [r for r in rows if r.kind == "model_turn"]
    assert len(turns) == 4 and settled.steps == 4
    calls = Counter(r.call_id for r in rows if r.kind == "tool_call")
    results = Counter(r.call_id for r in rows if r.kind == "tool_result")
    assert len(calls) == 3 and set(calls.values()) == {1}
    assert results == calls  # every call answered exactly once
    assert turns[-1].data["text"] == "Done despite the outage."
    # A run handed back for the outage is resumed, not "taken over from worker None".
    assert "from worker None" not in cluster.logs()


async def _state(admin: asyncpg.Connection, cluster: Cluster, name: str) -> str:
    """The run, its jobs and the workers as the database has them, and the workers' logs."""
    url = make_url(cluster.database_url)
    db = await asyncpg.connect(host=str(url.query["host"]), user=url.username, database=name)
    try:
        runs = await db.fetch("SELECT id, status, worker, lease FROM runs")
        jobs = await db.fetch("SELECT id, status, lock, worker_id FROM procrastinate_jobs")
        workers = await db.fetch("SELECT * FROM procrastinate_workers")
    finally:
        await db.close()
    return f"runs {runs}\njobs {jobs}\nworkers {workers}\n{cluster.logs()}"


async def test_the_sweep_requeues_a_running_run_whose_job_failed(own_cluster: Cluster) -> None:
    cluster = own_cluster
    model = cluster.script({"text": "Finished after all."})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        assert isinstance(rt.jobs, ProcrastinateJobs)
        run = await rt.start_chat("answer", model=model)

        async def deferred() -> bool | None:
            async with platform.kernel.sessions() as session:
                jobs = await session.scalar(text("SELECT count(*) FROM procrastinate_jobs"))
            return True if jobs == 1 else None

        await eventually(deferred)  # the start defers its job in the background
        async with platform.kernel.sessions.begin() as session:
            # As a worker leaves it when its job ends failed: running, its worker named
            # (this process, alive), the job no longer waiting.
            await session.execute(
                text("UPDATE runs SET status = 'running', worker = :worker WHERE id = :id"),
                {"worker": rt.worker, "id": run.id},
            )
            await session.execute(
                text("UPDATE procrastinate_jobs SET status = 'failed' WHERE lock = :lock"),
                {"lock": f"run:{run.id}"},
            )
        swept = await rt.jobs.sweep()
        assert swept.released == 1 and swept.deferred == 1
        assert (await rt.runs.get(run.id)).worker is None
        assert (await rt.jobs.sweep()).released == 0
        cluster.start_worker()
        settled = await cluster.settled(rt, run.id, 120)
    assert settled.status == "finished", cluster.logs()
    assert settled.steps == 1


async def test_waiting_for_a_run_rides_out_a_database_outage(
    own_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    # A process waiting for runs other processes advance (corral serve, a CLI chat) reads
    # their statuses from the store: an outage must not end every wait with an error.
    cluster = own_cluster
    admin, name = await _admin(cluster)
    try:
        async with corral.open(cluster.data_dir) as platform:
            rt = platform.runtime
            run = await rt.start_chat("wait", model=cluster.script({"text": "Never asked."}))
            with caplog.at_level(logging.WARNING, logger="corral.runtime"):
                waiting = asyncio.ensure_future(rt.wait_run(run.id))
                await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = $1 AND pid <> pg_backend_pid()",
                    name,
                )

                async def read_refused() -> bool | None:
                    said = "waiting for runs: the database is out of reach" in caplog.text
                    return True if said or waiting.done() else None

                await eventually(read_refused)
                assert not waiting.done(), waiting.exception()
                await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
                # What a worker does once the database is back: the run ends.
                url = make_url(cluster.database_url)
                db = await asyncpg.connect(
                    host=str(url.query["host"]), user=url.username, database=name
                )
                try:
                    await db.execute("UPDATE runs SET status = 'finished' WHERE id = $1", run.id)
                finally:
                    await db.close()
                settled = await asyncio.wait_for(waiting, 60)
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        await admin.close()
    assert settled.status == "finished"


async def test_a_run_meeting_an_outage_that_never_passes_ends_failed_saying_why(
    own_cluster: Cluster,
) -> None:
    # A full disk, say: every model turn the run stores is refused with an "insufficient
    # resources" error (SQLSTATE 53100), an outage by its class, while the database
    # answers everything else. The run is retried cluster_outage_retries times, then ends.
    cluster = own_cluster
    with (cluster.data_dir / "corral.toml").open("a") as settings:
        settings.write("cluster_outage_retries = 2\n")
    admin, name = await _admin(cluster)
    await admin.close()
    url = make_url(cluster.database_url)
    db = await asyncpg.connect(host=str(url.query["host"]), user=url.username, database=name)
    try:
        await db.execute(
            """
            CREATE FUNCTION refuse_turns() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.kind = 'model_turn' THEN
                RAISE EXCEPTION 'could not extend file: No space left on device'
                  USING ERRCODE = '53100';
              END IF;
              RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_turns BEFORE INSERT ON conversation_rows
              FOR EACH ROW EXECUTE FUNCTION refuse_turns();
            """
        )
        async with corral.open(cluster.data_dir) as platform:
            rt = platform.runtime
            cluster.start_worker()
            run = await rt.start_chat("hello", model=cluster.script({"text": "Never stored."}))
            settled = await asyncio.wait_for(rt.wait_run(run.id), 120)
        retries = await db.fetchval("SELECT outage_retries FROM runs WHERE id = $1", run.id)
    finally:
        await db.close()
    logs = cluster.logs()
    assert settled.status == "failed", logs
    assert retries == 2
    assert logs.count("met a database outage") == 3, logs
    assert "the database failed this run 3 times" in settled.detail
    assert "cluster_outage_retries" in settled.detail
    assert "No space left on device" in settled.detail
