"""Workflow schedules on a cluster: the workers' periodic task ticks the scheduler, and a
slot fires once however many workers tick."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

import corral
from corral.runtime.workflows import Workflows
from corral.runtime.workflows.store import FireRecord
from tests.runtime.cluster.conftest import Cluster, eventually

LAST_SWEEP = text(
    "SELECT max(defer_timestamp) FROM procrastinate_periodic_defers "
    "WHERE task_name = 'corral.sweep'"
)


async def test_a_cron_workflow_on_three_workers_fires_each_slot_once(cluster: Cluster) -> None:
    model = cluster.script({"text": "Reported."}, after_end="repeat_last")
    async with corral.open(cluster.data_dir) as platform:
        cluster.ensure_workers(3)
        workflows = platform.services.require(Workflows)
        # Created three minutes ago: its missed slot is due at once (run once), so the test
        # need not wait for the next minute.
        workflows.clock = lambda: datetime.now(UTC) - timedelta(minutes=3)
        made = await platform.call_tool(
            "workflow",
            {
                "set": {
                    "title": "Every minute",
                    "instruction": "Report.",
                    "schedule": {"cron": "* * * * *", "timezone": "UTC"},
                    "model": model,
                }
            },
        )
        assert not made.is_error, made.content
        workflow_id = str(made.data["workflow"]["workflow_id"])

        async def started() -> FireRecord | None:
            fires = await workflows.store.fires(workflow_id)
            return next((f for f in fires if f.outcome == "started"), None)

        fire = await eventually(started)
        assert fire.run_id is not None
        run = await asyncio.wait_for(platform.runtime.wait_run(fire.run_id), 60)
        fired_at = datetime.now(UTC).timestamp()

        async def three_more_sweeps() -> bool | None:
            async with platform.kernel.sessions() as session:
                last = await session.scalar(LAST_SWEEP)
            return True if last is not None and last > fired_at + 3 else None

        await eventually(three_more_sweeps)
        fires = await workflows.store.fires(workflow_id, limit=100)
        links = await workflows.store.run_links(workflow_id, limit=100)
    assert run.status == "finished", cluster.logs()
    slots = Counter(f.slot for f in fires)
    assert set(slots.values()) == {1}
    assert len(links) == sum(1 for f in fires if f.outcome == "started")
