"""todos: verb order, one locked goal per cycle, immutable conditions, the ledger, locks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.goals import Goals
from corral.runtime.runtime import Runtime
from corral.tools.results import ToolResult
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, call
from tests.runtime.recording import Recorder


@pytest.fixture
async def cid(rt: Runtime) -> str:
    return (await rt.start_conversation(model="script:unused")).id


async def todos(platform: Platform, cid: str, **args: Any) -> ToolResult:
    return await platform.call_tool("todos", args, conversation_id=cid)


async def state(platform: Platform, cid: str) -> dict[str, Any]:
    return (await platform.services.require(Goals).state(cid)).to_json()


GOAL = {"goal": "Ship the parser", "conditions": ["tests pass", "docs updated"], "loop": 3}


async def test_plan_opens_a_goal_with_conditions_loop_and_steps_in_one_call(
    rt_platform: Platform, cid: str
) -> None:
    result = await todos(rt_platform, cid, plan={**GOAL, "steps": ["write it", "test it"]})
    assert not result.is_error, result.text
    assert "Goal (cycle 1): Ship the parser [set by you]" in result.text
    assert "  1. [open] tests pass\n  2. [open] docs updated" in result.text
    assert "Loop bound: cycle 1 of 3." in result.text
    assert "  1. [pending] write it\n  2. [pending] test it" in result.text
    now = await state(rt_platform, cid)
    assert now["goal"]["set_by"]["kind"] == "agent" and now["next_step"] == 3


async def test_without_close_plan_comes_before_mark(rt_platform: Platform, cid: str) -> None:
    # mark names a condition and a step that only this call's plan creates.
    result = await todos(
        rt_platform,
        cid,
        plan={"goal": "G", "conditions": ["a", "b"], "steps": ["s"]},
        mark={"conditions": [1], "steps": [{"id": 1, "status": "in_progress"}]},
    )
    assert not result.is_error, result.text
    now = await state(rt_platform, cid)
    assert [c["met"] for c in now["goal"]["conditions"]] == [True, False]
    assert now["steps"][0]["status"] == "in_progress"


async def test_with_close_mark_and_close_end_the_cycle_before_plan_opens_the_next(
    rt_platform: Platform, cid: str
) -> None:
    await todos(rt_platform, cid, plan={"goal": "First approach", "steps": ["try A"]})
    replaced = await todos(
        rt_platform, cid, close="cleared", plan={"goal": "Second approach", "conditions": ["x"]}
    )
    assert not replaced.is_error, replaced.text
    assert [e["outcome"] for e in replaced.data["archived"]] == ["cleared"]  # type: ignore[index]
    # mark meets the last condition (achieving the cycle), close has nothing left to do, and
    # plan opens the third cycle: all in one call.
    third = await todos(
        rt_platform, cid, mark={"conditions": ["x"]}, close="achieved", plan={"goal": "Third"}
    )
    assert not third.is_error, third.text
    ledger = await rt_platform.services.require(Goals).ledger(cid)
    assert [(e["version"], e["outcome"], e["goal"]["text"]) for e in ledger] == [
        (1, "cleared", "First approach"),
        (2, "achieved", "Second approach"),
    ]
    assert ledger[0]["todos"] == [{"id": 1, "text": "try A", "status": "pending"}]
    now = await state(rt_platform, cid)
    assert now["goal"]["text"] == "Third" and now["steps"] == []
    assert 'Closed cycles: v1 cleared "First approach"; v2 achieved "Second approach"' in (
        third.text
    )


async def test_without_close_a_second_goal_is_refused_and_nothing_changes(
    rt_platform: Platform, cid: str
) -> None:
    await todos(rt_platform, cid, plan={"goal": "G1"})
    before = await state(rt_platform, cid)
    refused = await todos(rt_platform, cid, plan={"goal": "G2", "steps": ["new step"]})
    assert refused.error_code == "goal_open" and 'close: "cleared"' in refused.text
    assert await state(rt_platform, cid) == before


async def test_meeting_the_last_condition_archives_goal_and_list_and_empties_both(
    rt_platform: Platform, cid: str
) -> None:
    await todos(rt_platform, cid, plan={**GOAL, "steps": ["write it"]})
    first = await todos(rt_platform, cid, mark={"conditions": ["tests pass"]})
    assert not first.is_error and (await state(rt_platform, cid))["goal"] is not None
    last = await todos(
        rt_platform,
        cid,
        mark={"steps": [{"id": 1, "status": "done"}], "conditions": ["docs updated"]},
    )
    assert "cycle v1 achieved: 'Ship the parser' archived to the ledger" in last.text
    now = await state(rt_platform, cid)
    assert now["goal"] is None and now["steps"] == [] and now["next_step"] == 1
    [entry] = await rt_platform.services.require(Goals).ledger(cid)
    assert entry["version"] == 1 and entry["outcome"] == "achieved"
    assert [c["met"] for c in entry["goal"]["conditions"]] == [True, True]
    assert entry["todos"] == [{"id": 1, "text": "write it", "status": "done"}]
    assert entry["closed_by"] == "agent" and entry["opened_at"] and entry["closed_at"]


async def test_marking_is_all_or_nothing(rt_platform: Platform, cid: str) -> None:
    await todos(rt_platform, cid, plan={**GOAL, "steps": ["s1"]})
    before = await state(rt_platform, cid)
    out_of_range = await todos(
        rt_platform,
        cid,
        mark={"steps": [{"id": 1, "status": "done"}], "conditions": [1, 3]},
    )
    assert out_of_range.error_code == "condition_out_of_range"
    assert "numbered 1 to 2" in out_of_range.text
    unknown_text = await todos(rt_platform, cid, mark={"conditions": [1, "tests passed"]})
    assert unknown_text.error_code == "unknown_condition"
    unknown_step = await todos(rt_platform, cid, mark={"steps": [{"id": 9, "status": "done"}]})
    assert unknown_step.error_code == "unknown_step" and "steps now: 1" in unknown_step.text
    assert await state(rt_platform, cid) == before


async def test_conditions_are_immutable(rt_platform: Platform, cid: str) -> None:
    await todos(rt_platform, cid, plan=GOAL)
    before = await state(rt_platform, cid)
    for plan in (
        {"goal": "Ship the parser", "conditions": ["tests pass"]},
        {"conditions": ["tests pass", "docs updated", "benchmarks green"]},
    ):
        refused = await todos(rt_platform, cid, plan=plan)
        assert refused.error_code == "conditions_immutable", refused.text
    assert await state(rt_platform, cid) == before
    # Resending the goal as it is changes nothing and is not an error.
    same = await todos(rt_platform, cid, plan={**GOAL, "steps": ["more"]})
    assert not same.is_error and len((await state(rt_platform, cid))["steps"]) == 1
    orphan = await todos(rt_platform, cid, close="cleared", plan={"conditions": ["c"]})
    assert orphan.error_code == "goal_required"


async def test_a_goal_set_by_the_user_is_locked_to_the_agent(
    rt_platform: Platform, cid: str
) -> None:
    goals = rt_platform.services.require(Goals)
    await goals.set_goal(cid, "Migrate the database", conditions=["data copied", "old db off"])
    shown = await todos(rt_platform, cid, plan={"steps": ["copy"]})
    assert "Migrate the database [set by user owner — locked]" in shown.text
    before = await state(rt_platform, cid)
    cleared = await todos(rt_platform, cid, close="cleared")
    assert cleared.error_code == "goal_locked" and "cannot be cleared" in cleared.text
    replaced = await todos(rt_platform, cid, plan={"goal": "Something easier"})
    assert replaced.error_code == "goal_locked"
    early = await todos(rt_platform, cid, close="achieved")
    assert early.error_code == "conditions_unmet" and "1, 2" in early.text
    assert await state(rt_platform, cid) == before
    # Working towards it is the agent's part: the last condition achieves it.
    done = await todos(rt_platform, cid, mark={"conditions": [1, 2]})
    assert not done.is_error
    [entry] = await goals.ledger(cid)
    assert entry["outcome"] == "achieved"
    assert entry["goal"]["set_by"] == {"kind": "user", "name": "owner", "evolve": False}
    await goals.set_goal(cid, "A")  # no goal is open after the achievement
    with pytest.raises(UsageError, match="is open"):
        await goals.set_goal(cid, "B")
    replaced_by_user = await goals.set_goal(cid, "C", replace=True)
    assert replaced_by_user.goal is not None and replaced_by_user.goal.text == "C"
    assert [(e["outcome"], e["goal"]["text"]) for e in await goals.ledger(cid)] == [
        ("achieved", "Migrate the database"),
        ("cleared", "A"),
    ]


async def test_a_workflow_goal_is_locked_unless_its_template_says_evolve_agent(
    rt_platform: Platform, rt: Runtime
) -> None:
    goals = rt_platform.services.require(Goals)
    locked = (await rt.start_conversation()).id
    await goals.set_goal(locked, "Nightly report", workflow="nightly")
    refused = await todos(rt_platform, locked, close="cleared")
    assert refused.error_code == "goal_locked"
    assert "[set by workflow nightly — locked]" in refused.text
    open_ = (await rt.start_conversation()).id
    await goals.set_goal(open_, "Nightly report", workflow="nightly", evolve="agent", loop=2)
    shown = await todos(rt_platform, open_, plan={"steps": ["gather"]})
    assert "Nightly report [set by workflow nightly]\n" in shown.text
    swapped = await todos(rt_platform, open_, close="cleared", plan={"goal": "Weekly report"})
    assert not swapped.is_error, swapped.text
    with pytest.raises(UsageError, match="workflow"):
        await goals.set_goal(open_, "X", evolve="agent", replace=True)


async def test_close_achieved_and_cleared_rules(rt_platform: Platform, cid: str) -> None:
    nothing = await todos(rt_platform, cid, close="achieved")
    assert nothing.error_code == "nothing_to_close"
    await todos(rt_platform, cid, plan={"goal": "Tidy up"})  # no conditions
    assert not (await todos(rt_platform, cid, close="achieved")).is_error
    await todos(rt_platform, cid, plan={"steps": ["a", "b"]})  # the agent's own list
    no_goal = await todos(rt_platform, cid, close="achieved")
    assert no_goal.error_code == "no_goal"
    dropped = await todos(rt_platform, cid, close="cleared")
    assert not dropped.is_error and (await state(rt_platform, cid))["steps"] == []
    ledger = await rt_platform.services.require(Goals).ledger(cid)
    assert [(e["outcome"], e["goal"]) for e in ledger][1] == ("cleared", None)
    assert [e["outcome"] for e in ledger] == ["achieved", "cleared"]


async def test_a_list_without_a_goal_archives_itself_when_every_step_is_done(
    rt_platform: Platform, cid: str
) -> None:
    await todos(rt_platform, cid, plan={"steps": ["a", "b", "c"]})
    changes = [
        {"id": 1, "status": "done"},
        {"id": 2, "remove": True},
        {"id": 3, "text": "c, reworded"},
    ]
    await todos(rt_platform, cid, mark={"steps": changes})
    assert [s["text"] for s in (await state(rt_platform, cid))["steps"]] == ["a", "c, reworded"]
    last = await todos(rt_platform, cid, mark={"steps": [{"id": 3, "status": "skipped"}]})
    assert "cycle v1 completed" in last.text
    [entry] = await rt_platform.services.require(Goals).ledger(cid)
    assert entry["outcome"] == "completed" and entry["goal"] is None
    assert [(s["id"], s["status"]) for s in entry["todos"]] == [(1, "done"), (3, "skipped")]
    empty = await todos(rt_platform, cid, mark={"steps": [{"id": 1}]})
    assert empty.error_code == "unknown_step"  # the archived list is gone


async def test_the_loop_bound_limits_the_cycles(rt_platform: Platform, cid: str) -> None:
    first = await todos(rt_platform, cid, plan={"goal": "One", "loop": 2})
    assert "Loop bound: cycle 1 of 2." in first.text
    between = await todos(rt_platform, cid, close="achieved")
    assert "Loop bound: 1 of 2 cycles closed." in between.text
    second = await todos(rt_platform, cid, plan={"goal": "Two"})
    assert "Loop bound: cycle 2 of 2." in second.text
    ended = await todos(rt_platform, cid, close="achieved")
    assert "Loop bound reached: 2 of 2 cycles closed" in ended.text
    refused = await todos(rt_platform, cid, plan={"goal": "Three"})
    assert refused.error_code == "loop_exhausted"
    await rt_platform.services.require(Goals).set_goal(
        cid, "Four", loop=5
    )  # a person may always set one
    raised = await todos(rt_platform, cid, plan={"loop": 9})
    assert raised.error_code == "loop_locked"


async def test_concurrent_calls_are_applied_one_after_the_other(
    rt_platform: Platform, cid: str
) -> None:
    results = await asyncio.gather(
        *(todos(rt_platform, cid, plan={"steps": [f"step {i}"]}) for i in range(6))
    )
    assert not any(r.is_error for r in results)
    steps = (await state(rt_platform, cid))["steps"]
    assert sorted(s["id"] for s in steps) == [1, 2, 3, 4, 5, 6]
    assert sorted(s["text"] for s in steps) == [f"step {i}" for i in range(6)]


async def test_the_state_and_the_closed_cycles_line_are_always_in_the_system_prompt(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Recorder(
        rt,
        "rec:todos",
        {"tool_calls": [call("todos", plan={"goal": "Greet", "conditions": ["said hi"]})]},
        {"tool_calls": [call("todos", mark={"conditions": [1]})]},
        {"text": "Hi!"},
    )
    turn = await rt_platform.chat("greet me", model=model.name)
    assert turn.status == "finished" and turn.text == "Hi!"
    first, second, third = (seen.system for seen in model.seen)
    assert "<goal_state>\nNo goal or todo list is open." in first
    assert "Goal (cycle 1): Greet [set by you]" in second and "1. [open] said hi" in second
    assert "No goal or todo list is open." in third
    assert 'Closed cycles: v1 achieved "Greet"' in third
    meta = await rt_platform.conversation_meta(turn.conversation_id)
    assert [e["version"] for e in meta["sessionLedger"]] == [1]
    assert meta["goal"] is None and meta["todos"] == []


async def test_a_goal_set_from_another_process_reaches_the_next_prompt(
    data_dir: Path, rt_platform: Platform, rt: Runtime
) -> None:
    model = Recorder(rt, "rec:two", {"text": "one"}, {"text": "two"}, {"text": "three"})
    first = await rt_platform.chat("hi", model=model.name)
    cid = first.conversation_id
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as other:
        await other.services.require(Goals).set_goal(cid, "Write the report", conditions=["sent"])
    await rt_platform.chat("next", conversation_id=cid)
    assert "Write the report [set by user owner — locked]" in model.seen[1].system
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as other:
        await other.services.require(Goals).clear_goal(cid)
    await rt_platform.chat("and now", conversation_id=cid)
    assert "No goal or todo list is open." in model.seen[2].system
    assert 'Closed cycles: v1 cleared "Write the report"' in model.seen[2].system
    cards = [r.data for r in await rt.conversations.rows(cid) if r.data.get("card") == "goal"]
    assert [(c["action"], c["by"]["kind"]) for c in cards] == [("set", "user"), ("cleared", "user")]


async def test_todos_needs_a_conversation(rt_platform: Platform) -> None:
    outside = await rt_platform.call_tool("todos", {"plan": {"goal": "G"}})
    assert outside.error_code == "no_conversation"
