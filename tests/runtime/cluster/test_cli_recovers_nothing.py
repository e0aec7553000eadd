"""A CLI command on a cluster's database never recovers anything: a run left running by a
SIGKILLed worker and a queued run without a worker stay as they are, and the cluster's
sweep alone takes them over once a worker is there."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import corral
from tests.runtime.cluster.conftest import Cluster, call, read_started


async def test_a_cli_command_leaves_other_processes_runs_to_the_sweep(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    pipe = cluster.fifo("held")
    held_model = cluster.script(
        {"tool_calls": [call("hold", fifo=str(pipe))]}, {"text": "Carried on after the kill."}
    )
    queued_model = cluster.script({"text": "Answered once a worker came."})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        dying = cluster.start_worker()
        held = await rt.start_chat("hold", model=held_model)
        await read_started(pipe)
        dying.kill()
        dying.wait()
        queued = await rt.start_chat("wait for a worker", model=queued_model)

        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        env["CORRAL_RUN_JOBS"] = "auto"  # as an operator's shell has it: the default
        listed = await asyncio.to_thread(
            subprocess.run,
            [
                *(sys.executable, "-m", "corral", "--data-dir", str(cluster.data_dir)),
                *("approvals", "list"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        assert (await rt.runs.get(held.id)).status == "running"
        assert (await rt.runs.get(queued.id)).status == "queued"

        cluster.start_worker()
        settled = [await cluster.settled(rt, r.id, 120) for r in (held, queued)]
        rows = await rt.conversations.rows(held.conversation_id, run_id=held.id)
    assert [r.status for r in settled] == ["finished", "finished"], cluster.logs()
    results = [r.data["result"] for r in rows if r.kind == "tool_result"]
    assert [r["error_code"] for r in results] == ["interrupted"]
