"""A worker paused on this host (SIGSTOP; its process lives on) is taken over once its
heartbeats stop, as one on another machine is: the job that comes back claims the run at
once, not after the sweep has found the run without a job. Fencing makes a takeover of a
worker that was only slow safe: its next write is refused and it lets go."""

from __future__ import annotations

import signal

import corral
from tests.runtime.cluster.conftest import Cluster, call, read_started


async def test_a_worker_paused_on_this_host_is_taken_over_by_the_job_that_comes_back(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    started, gate = cluster.fifo("started"), cluster.fifo("gate")
    model = cluster.script(
        {"tool_calls": [call("checkin", fifo=str(started), gate=str(gate))]},
        {"text": "Carried on here.", "when_result_contains": "interrupted"},
    )
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        paused = cluster.start_worker()
        run = await rt.start_chat("check in", model=model)
        await read_started(started)
        holder = (await rt.runs.get(run.id)).worker
        paused.send_signal(signal.SIGSTOP)
        cluster.start_worker()
        settled = await cluster.settled(rt, run.id, 120)
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    logs = cluster.logs()
    assert settled.status == "finished", logs
    assert settled.worker not in (holder, None)
    results = [r.data["result"] for r in rows if r.kind == "tool_result"]
    assert [r["error_code"] for r in results] == ["interrupted"]
    # Claimed from the paused worker by the job its stalled heartbeats handed back; the
    # sweep never had to release a run that no job advanced.
    assert f"taken over from worker {holder}" in logs, logs
    assert "left running with no job" not in logs, logs
