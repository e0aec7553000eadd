"""Runs advance on `corral worker` processes; the process that queues them only waits."""

from __future__ import annotations

import corral
from corral.runtime.cluster import ProcrastinateJobs
from tests.runtime.cluster.conftest import Cluster, call


async def test_a_turn_queued_here_runs_on_a_worker(cluster: Cluster) -> None:
    model = cluster.script(
        {"text": "Looking.", "tool_calls": [call("echo", text="hi")]},
        {"text": "It said hi."},
    )
    async with corral.open(cluster.data_dir) as platform:
        assert isinstance(platform.runtime.jobs, ProcrastinateJobs)
        cluster.start_worker()
        result = await platform.runtime.chat("say hi", model=model)
        run = await platform.runtime.runs.get(result.run_id)
    assert result.status == "finished", cluster.logs()
    assert run.worker is not None and run.worker != platform.runtime.worker
    assert "It said hi." in result.text
