"""The workflows, their scheduler and webhooks are built when first needed (issue 39, item 3):
not at open, but on the ``workflow`` tool's first call, a lookup, a cluster tick or serving."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import corral
from corral.platform import Platform
from corral.platform.workflows_on_demand import SCHEDULER, WEBHOOKS, WORKFLOWS
from corral.runtime.workflows import Scheduler, Webhooks, Workflows
from corral.tools.services import service_key
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT


def built(platform: Platform, key: str) -> object | None:
    return platform.services.deferred[key].built


def test_the_keys_name_the_services() -> None:
    assert WORKFLOWS == service_key(Workflows)
    assert SCHEDULER == service_key(Scheduler)
    assert WEBHOOKS == service_key(Webhooks)


async def test_the_tool_builds_the_service_on_its_first_call(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert built(platform, WORKFLOWS) is None and built(platform, SCHEDULER) is None
        result = await platform.call_tool(
            "workflow", {"set": {"title": "Daily", "instruction": "Report."}}
        )
        assert not result.is_error, result.content
        service = built(platform, WORKFLOWS)
        assert service is not None and platform.workflows is service
        assert platform.services.require(Webhooks) is built(platform, WEBHOOKS)
        listed = await service.visible(await platform.caller())
        assert [w.title for w in listed] == ["Daily"]
        assert built(platform, SCHEDULER) is None  # nothing ticked, nothing served


async def test_a_cluster_tick_fires_a_due_workflow(data_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "Reported."}], "after_end": "repeat_last"}))
    model = f"script:{script}"
    # Far enough ahead that a slow open cannot make it past; the tick's clock is set to it.
    due = datetime.now(UTC) + timedelta(minutes=10)
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as first:
        result = await first.call_tool(
            "workflow",
            {
                "set": {
                    "title": "Once",
                    "instruction": "Report.",
                    "schedule": {"at": due.isoformat()},
                    "model": model,
                }
            },
        )
        assert not result.is_error, result.content
        workflow_id = result.data["workflow"]["workflow_id"]
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        assert built(platform, WORKFLOWS) is None
        # The clock is set past the slot on the service the tick builds, before it ticks.
        service = platform.services.require(Workflows)
        service.clock = lambda: due + timedelta(seconds=5)
        assert built(platform, SCHEDULER) is None
        for tick in platform.runtime.on_tick:
            await tick()
        assert built(platform, SCHEDULER) is not None
        shown = await platform.call_tool("workflow", {"get": {"workflow_id": workflow_id}})
        assert [f["outcome"] for f in shown.data["setup"]["recent_fires"]] == ["started"]


async def test_serving_starts_the_scheduler(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert built(platform, SCHEDULER) is None
        await platform.runtime.host()
        assert built(platform, SCHEDULER) is not None
