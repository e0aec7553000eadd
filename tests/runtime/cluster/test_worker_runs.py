"""Runs advance on `corral worker` processes; the process that queues them only waits,
stops them and answers them through the store and the engine."""

from __future__ import annotations

import time

import corral
from corral.runtime.cluster import ProcrastinateJobs
from tests.runtime.cluster.conftest import Cluster, call, read_started


async def test_a_turn_queued_here_runs_on_a_worker(cluster: Cluster) -> None:
    model = cluster.script(
        {"text": "Looking.", "tool_calls": [call("echo", text="hi")]},
        {"text": "It said hi."},
    )
    async with corral.open(cluster.data_dir) as platform:
        assert isinstance(platform.runtime.jobs, ProcrastinateJobs)
        cluster.ensure_workers(2)
        result = await platform.runtime.chat("say hi", model=model)
        run = await platform.runtime.runs.get(result.run_id)
    assert result.status == "finished", cluster.logs()
    assert run.worker is not None and run.worker != platform.runtime.worker
    assert "It said hi." in result.text


async def test_stop_reaches_a_run_on_another_worker_within_a_second(cluster: Cluster) -> None:
    pipe = cluster.fifo("stop-hold")
    model = cluster.script({"tool_calls": [call("hold", fifo=str(pipe))]}, {"text": "never"})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        cluster.ensure_workers(2)
        run = await rt.start_chat("hold on", model=model)
        await read_started(pipe)
        started = time.monotonic()
        stopped = await rt.stop(run.id)
        took = time.monotonic() - started
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    assert stopped.status == "stopped", cluster.logs()
    assert took < 1.5, f"Stop took {took:.2f} s"
    hold = next(r for r in rows if r.kind == "tool_result")
    assert hold.data["result"]["status"] == "stopped"


async def test_a_parked_run_answered_while_no_worker_runs_finishes_later(
    cluster: Cluster,
) -> None:
    model = cluster.script(
        {"text": "Needs a yes.", "tool_calls": [call("launch", what="the probe")]},
        {"text": "Launched.", "when_result_contains": "launched the probe"},
    )
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        cluster.ensure_workers(1)
        parked = await rt.chat("launch it", model=model)
        assert parked.status == "parked", cluster.logs()
        cluster.stop_all()
        assert all(p.poll() is not None for p in cluster.workers)
        await platform.decide_approval(parked.waiting[0].id, "approve")
        queued = await rt.runs.get(parked.run_id)
        assert queued.status == "queued"  # its job waits in the engine for a worker
        cluster.ensure_workers(1)
        settled = await cluster.settled(rt, parked.run_id, 60)
        result = await rt.result(parked.run_id)
    assert settled.status == "finished", cluster.logs()
    assert "Launched." in result.text
