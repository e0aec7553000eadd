"""Limits that are settings hold across the whole cluster, not per worker process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import corral
from corral.runtime.runs import ACTIVE
from tests.runtime.cluster.conftest import Cluster, call, read_started

PARENTS = 6
LIMIT = 2


def _release(gate: Path) -> None:
    with gate.open("w"):  # the parent waiting at this gate reads end-of-file and goes on
        pass


async def test_the_background_run_limit_holds_across_three_workers(cluster: Cluster) -> None:
    child = cluster.script({"tool_calls": [call("linger")]}, {"text": "stopped"})
    pipes = [
        (cluster.fifo(f"limit-in-{i}"), cluster.fifo(f"limit-gate-{i}")) for i in range(PARENTS)
    ]
    parents = [
        cluster.script(
            {"tool_calls": [call("checkin", fifo=str(fifo), gate=str(gate))]},
            {"tool_calls": [call("delegate", task="linger", background=True, model=child)]},
            {"text": "Handed off."},
        )
        for fifo, gate in pipes
    ]
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        await platform.admin.set_live("delegate_background_max", LIMIT)
        cluster.ensure_workers(3)
        started = [await rt.start_chat("hand it off", model=p, profile="auto") for p in parents]
        # All six parents wait at the gate at once: a worker advances at most 4 runs, so they
        # are spread over several workers; released together, they reach `delegate` at once.
        for fifo, _ in pipes:
            await read_started(fifo)
        for _, gate in pipes:
            await asyncio.to_thread(_release, gate)
        ended = await asyncio.gather(*(rt.wait_run(r.id) for r in started))
        outcomes = []
        for run in ended:
            rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
            results = [r.data["result"] for r in rows if r.kind == "tool_result"]
            assert results, (run.status, cluster.logs())
            outcomes.append(results[1].get("error_code") or "started")
        children = [
            r for r in await rt.runs.list_runs(statuses=list(ACTIVE)) if r.kind == "delegate"
        ]
        for lingering in children:
            await rt.stop(lingering.id)
    assert all(r.status == "finished" for r in ended), cluster.logs()
    assert (
        sorted(outcomes) == ["delegate_background_limit"] * (PARENTS - LIMIT) + ["started"] * LIMIT
    )
    assert len(children) == LIMIT
    assert len({r.worker for r in ended}) > 1  # the parents ran on several workers
