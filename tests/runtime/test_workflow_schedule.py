"""Schedules: the trigger function, and ticks on an injected clock firing each slot once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import corral
from corral.platform import Platform
from corral.runtime.workflows import Scheduler, Workflows, plan
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter

T0 = datetime(2027, 1, 4, 6, 58, tzinfo=UTC)  # a Monday
DAILY = {"cron": "0 7 * * *", "timezone": "UTC"}


def at(hours: float = 0, minutes: float = 0, seconds: float = 0) -> datetime:
    return T0 + timedelta(hours=hours, minutes=minutes, seconds=seconds)


# -- the plain function ---------------------------------------------------------------------


def test_a_slot_is_due_from_its_time_and_not_before() -> None:
    assert plan(DAILY, T0, at(minutes=1)).slot is None
    due = plan(DAILY, T0, at(minutes=2))
    assert due.slot == datetime(2027, 1, 4, 7, tzinfo=UTC) and due.run and not due.missed
    assert due.next_fire_at == datetime(2027, 1, 5, 7, tzinfo=UTC)
    # Handled already: the anchor is the slot itself.
    assert plan(DAILY, due.slot, at(minutes=3)).slot is None


def test_missed_slots_run_once_or_are_skipped_by_policy() -> None:
    three_days_later = at(hours=72, minutes=30)
    once = plan(DAILY, T0, three_days_later, "run_once")
    assert once.missed and once.run and once.slot == datetime(2027, 1, 7, 7, tzinfo=UTC)
    skipped = plan(DAILY, T0, three_days_later, "skip")
    assert skipped.missed and not skipped.run
    assert skipped.next_fire_at == datetime(2027, 1, 8, 7, tzinfo=UTC)


def test_cron_follows_its_time_zone_across_daylight_saving() -> None:
    paris = {"cron": "0 7 * * *", "timezone": "Europe/Paris"}
    winter = plan(paris, datetime(2027, 1, 4, tzinfo=UTC), datetime(2027, 1, 4, 6, 1, tzinfo=UTC))
    assert winter.slot == datetime(2027, 1, 4, 6, tzinfo=UTC)  # 07:00 CET
    summer = plan(paris, datetime(2027, 7, 5, tzinfo=UTC), datetime(2027, 7, 5, 5, 1, tzinfo=UTC))
    assert summer.slot == datetime(2027, 7, 5, 5, tzinfo=UTC)  # 07:00 CEST


def test_a_one_shot_is_due_once() -> None:
    once = {"at": at(hours=1).isoformat()}
    assert plan(once, T0, at(minutes=59)).slot is None
    due = plan(once, T0, at(hours=1, seconds=5))
    assert due.slot == at(hours=1) and due.run and due.next_fire_at is None
    assert plan(once, due.slot, at(hours=5)).slot is None


# -- ticks ------------------------------------------------------------------------------------


def workflows_of(platform: Platform, now: datetime) -> Workflows:
    service = platform.services.require(Workflows)
    service.clock = lambda: now
    return service


async def create(platform: Platform, now: datetime, **fields: Any) -> str:
    workflows_of(platform, now)
    result = await platform.call_tool(
        "workflow", {"set": {"title": "Daily", "instruction": "Report.", **fields}}
    )
    assert not result.is_error, result.content
    return str(result.data["workflow"]["workflow_id"])


async def tick(platform: Platform, now: datetime) -> list[Any]:
    fired = await platform.services.require(Scheduler).tick(now)
    for f in fired:
        if f.run_id:
            await platform.runtime.wait_run(f.run_id)
    return fired


async def test_a_cron_slot_fires_exactly_once_across_a_restart(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Reported."}, after_end="repeat_last")
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as first:
        workflow_id = await create(first, T0, schedule=DAILY, model=model)
        assert await tick(first, at(minutes=1)) == []
        [fired] = await tick(first, at(minutes=2, seconds=5))
        assert (fired.workflow_id, fired.outcome) == (workflow_id, "started")
        assert fired.slot == datetime(2027, 1, 4, 7, tzinfo=UTC)
        assert await tick(first, at(minutes=2, seconds=30)) == []
        run = await first.runtime.runs.get(str(fired.run_id))
        assert run.kind == "workflow" and run.status == "finished"
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as second:
        assert await tick(second, at(minutes=2, seconds=40)) == []
        assert await tick(second, at(hours=23)) == []
        [tomorrow] = await tick(second, at(hours=24, minutes=2, seconds=1))
        assert tomorrow.slot == datetime(2027, 1, 5, 7, tzinfo=UTC)
        shown = await second.call_tool("workflow", {"get": {"workflow_id": workflow_id}})
        fires = shown.data["setup"]["recent_fires"]
        assert [f["outcome"] for f in fires] == ["started", "started"]
        assert len(shown.data["setup"]["recent_runs"]) == 2


async def test_two_schedulers_on_one_store_fire_a_slot_once(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "ok"}, after_end="repeat_last")
    async with (
        corral.open(data_dir, package_paths=[DEMO, RTKIT]) as one,
        corral.open(data_dir, package_paths=[DEMO, RTKIT]) as two,
    ):
        await create(one, T0, schedule=DAILY, model=model)
        fired = await tick(one, at(minutes=3)) + await tick(two, at(minutes=3))
        assert [f.outcome for f in fired] == ["started"]


async def test_a_one_shot_fires_once(rt_platform: Platform, write_script: ScriptWriter) -> None:
    workflow_id = await create(
        rt_platform, T0, schedule={"at": at(hours=1).isoformat()}, model=write_script({"text": "k"})
    )
    assert await tick(rt_platform, at(minutes=59)) == []
    [fired] = await tick(rt_platform, at(hours=1, seconds=1))
    assert fired.outcome == "started"
    assert await tick(rt_platform, at(hours=30)) == []
    shown = await rt_platform.call_tool("workflow", {"get": {"workflow_id": workflow_id}})
    assert shown.data["setup"]["next_fire_at"] is None


async def test_a_missed_slot_runs_once_or_is_skipped_as_the_setting_says(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "ok"}, after_end="repeat_last")
    await create(rt_platform, T0, schedule=DAILY, model=model)
    [caught_up] = await tick(rt_platform, at(hours=50))  # two slots passed while down
    assert caught_up.outcome == "started" and caught_up.slot == datetime(2027, 1, 6, 7, tzinfo=UTC)
    await rt_platform.admin.set_live("workflow_missed_fire", "skip")
    [skipped] = await tick(rt_platform, at(hours=80))
    assert (skipped.outcome, skipped.run_id) == ("skipped", None)
    [on_time] = await tick(rt_platform, at(hours=96, minutes=2, seconds=30))
    assert on_time.outcome == "started"


async def test_the_missed_fire_setting_takes_only_its_choices(rt_platform: Platform) -> None:
    try:
        await rt_platform.admin.set_live("workflow_missed_fire", "sometimes")
    except corral.UsageError as exc:
        assert "'run_once', 'skip'" in str(exc)
    else:
        raise AssertionError("an unknown policy was stored")


async def test_paused_workflows_do_not_fire_and_resuming_skips_the_paused_slots(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "ok"}, after_end="repeat_last")
    workflow_id = await create(rt_platform, T0, schedule=DAILY, model=model)
    await rt_platform.call_tool(
        "workflow", {"set": {"workflow_id": workflow_id, "status": "paused"}}
    )
    assert await tick(rt_platform, at(hours=30)) == []
    workflows_of(rt_platform, at(hours=30))
    await rt_platform.call_tool(
        "workflow", {"set": {"workflow_id": workflow_id, "status": "active"}}
    )
    assert await tick(rt_platform, at(hours=30, minutes=1)) == []
    [fired] = await tick(rt_platform, at(hours=48, minutes=2, seconds=1))
    assert fired.slot == datetime(2027, 1, 6, 7, tzinfo=UTC)


async def test_an_owner_who_lost_dispatch_gets_a_refused_fire_not_a_run(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.identity.create_role(
        "author", ["workflow.read", "workflow.write", "workflow.dispatch"]
    )
    await rt_platform.identity.create_user("ana", "author")
    workflows_of(rt_platform, T0)
    created = await rt_platform.call_tool(
        "workflow",
        {
            "set": {
                "title": "A",
                "instruction": "x",
                "schedule": DAILY,
                "model": write_script({"text": "k"}),
            }
        },
        user="ana",
    )
    assert not created.is_error
    await rt_platform.identity.create_role("reader", ["workflow.read"])
    await rt_platform.identity.set_role("ana", "reader")
    [fired] = await tick(rt_platform, at(minutes=2, seconds=1))
    assert fired.outcome == "refused" and "no longer has feature 'workflow.dispatch'" in fired.note
