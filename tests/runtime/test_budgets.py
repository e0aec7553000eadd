"""Budgets: limits on requests, tokens, cost and tool calls; a child charged to its parent;
a run at a limit gets its wrap-up turn and ends budget_exhausted."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.budgets import Budget, Spend, parse_budget
from corral.runtime.budgets.keeper import BudgetKeeper
from corral.runtime.budgets.limits import remaining, tightest
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call

AUTO = {"profile": "auto"}


def results_of(rows: Any, tool: str) -> list[dict[str, Any]]:
    return [r.data["result"] for r in rows if r.kind == "tool_result" and r.data["tool"] == tool]


def test_a_budget_parses_with_clear_errors_and_the_tightest_wins() -> None:
    budget = parse_budget({"total_tokens": 100, "cost_usd": 1, "per_tool": {"execute": 40}})
    assert budget == Budget(total_tokens=100, cost_usd=1.0, per_tool={"execute": 40})
    with pytest.raises(UsageError, match="no limit called 'tokens'; the limits are requests"):
        parse_budget({"tokens": 5})
    with pytest.raises(UsageError, match=r"budget.per_tool.execute must be a whole number"):
        parse_budget({"per_tool": {"execute": -1}})
    with pytest.raises(UsageError, match="must be a JSON object of limits"):
        parse_budget([1])
    with pytest.raises(UsageError, match=r"budget.cost_usd must be a number"):
        parse_budget({"cost_usd": "2"})
    both = tightest(
        [Budget(requests=5, per_tool={"execute": 9}), Budget(requests=3, total_tokens=7)]
    )
    assert both == Budget(requests=3, total_tokens=7, per_tool={"execute": 9})
    left = remaining(both, Spend(requests=4, total_tokens=2, per_tool={"execute": 1}))
    assert left == Budget(requests=0, total_tokens=5, per_tool={"execute": 8})


async def test_a_run_at_its_token_limit_wraps_up_and_ends_budget_exhausted(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("budgets", {"agents": {"default": {"total_tokens": 5}}})
    # The scripted model reports len(messages) input tokens and len(text)//4 + 1 output.
    model = write_script(
        {"tool_calls": [call("echo", text="one")]},  # 1 + 1 = 2 tokens
        {"tool_calls": [call("echo", text="two")]},  # 3 + 1: 6 in all, past the limit
        {"text": "Wrapped up: echoed once."},
        {"text": "never reached"},
    )
    turn = await rt_platform.chat("go", model=model, **AUTO)
    run = await rt.runs.get(turn.run_id)
    assert (run.status, run.reason) == ("partial", "budget_exhausted")
    assert "the limit of 5 total tokens (spent 6)" in run.detail, run.detail
    echoes = results_of(turn.rows, "echo")
    assert [e["status"] for e in echoes] == ["ok", "error"]
    assert echoes[1]["error_code"] == "budget_exhausted"  # the second call never ran
    turns = [r.data["text"] for r in turn.rows if r.kind == "model_turn"]
    assert turns[-1] == "Wrapped up: echoed once."
    shown = await rt.run_budget(turn.run_id)
    assert shown is not None
    tokens = shown["limits"]["total_tokens"]
    assert tokens["limit"] == 5 and tokens["spent"] > 6  # the wrap-up's spend is counted too
    assert "total tokens" in shown["exhausted"]


async def test_a_delegate_is_charged_to_its_parent_and_gets_at_most_the_remainder(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live(
        "budgets", {"profiles": {"auto": {"total_tokens": 1000, "requests": 20}}}
    )
    child = write_script(
        {"tool_calls": [call("echo", text="a")]},
        {"text": "Child done with a long enough answer."},
        name="child",
    )
    parent = write_script(
        # The child asks for more than the parent has: it gets the remainder.
        {"tool_calls": [call("delegate", task="t", model=child, budget={"total_tokens": 5000})]},
        {"text": "Parent done."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert turn.status == "finished", turn.text
    (result,) = results_of(turn.rows, "delegate")
    child_run = result["data"]["run_id"]
    mine = await rt.budgets.find(turn.run_id)
    theirs = await rt.budgets.find(child_run)
    assert mine is not None and theirs is not None
    assert theirs.charged_to == turn.run_id
    # Given when the parent had spent its first response (1 input + 1 output token).
    assert theirs.limits.total_tokens == 1000 - 2
    assert theirs.limits.requests == 20 - 1
    assert theirs.spent.requests == 2
    # Everything the child spent is on the parent's account too, beside its own two turns.
    assert mine.spent.requests == 2 + theirs.spent.requests
    assert mine.spent.total_tokens == (1 + 1) + (3 + 4) + theirs.spent.total_tokens
    assert mine.spent.tool_calls == 2 and mine.spent.per_tool == {"delegate": 1, "echo": 1}


async def test_a_child_that_spends_its_parents_remainder_ends_and_the_parent_is_told(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("budgets", {"agents": {"default": {"requests": 3}}})
    child = write_script(
        {"tool_calls": [call("echo", text="a")]},
        {"tool_calls": [call("echo", text="b")]},
        {"text": "Child wrap-up."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]},
        {"text": "Parent wrap-up."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = results_of(turn.rows, "delegate")
    text = result["content"][0]["text"]
    assert "Partial answer" in text and "the limit of 2 model requests" in text, text
    assert "Child wrap-up." in text
    run = await rt.runs.get(turn.run_id)
    assert (run.status, run.reason) == ("partial", "budget_exhausted"), run.detail
    assert "the limit of 3 model requests" in run.detail


async def test_the_41st_execute_is_refused_before_it_runs(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    drive = rt_platform.settings.drive_dir
    conversation = await rt.start_conversation()
    await rt.set_conversation_budget(conversation.id, {"per_tool": {"execute": 40}})
    calls = [call("execute", command=f"touch mark-{i}", reason="mark") for i in range(41)]
    model = write_script({"tool_calls": calls}, {"text": "done"})
    turn = await rt_platform.chat("go", model=model, conversation_id=conversation.id, **AUTO)
    assert turn.status == "finished", turn.text
    executed = results_of(turn.rows, "execute")
    refused = [r for r in executed if r.get("error_code") == "budget_exhausted"]
    assert len(executed) == 41 and len(refused) == 1, [r.get("error_code") for r in executed]
    assert (
        "the limit of 40 calls of 'execute' is used up (40 made)"
        in refused[0]["content"][0]["text"]
    )
    marks = sorted(p.name for p in drive.glob("mark-*"))
    assert len(marks) == 40  # the refused call made no mark: it never ran
    shown = await rt.run_budget(turn.run_id)
    assert shown is not None and shown["limits"]["per_tool.execute"] == {"spent": 40, "limit": 40}


async def test_an_owner_sets_a_conversation_budget_and_bad_limits_are_refused(
    rt_platform: Platform, rt: Runtime
) -> None:
    conversation = await rt.start_conversation()
    assert await rt.set_conversation_budget(conversation.id, {"requests": 4}) == {"requests": 4}
    assert await rt.conversation_budget(conversation.id) == {"requests": 4}
    with pytest.raises(UsageError, match="no limit called 'request'"):
        await rt.set_conversation_budget(conversation.id, {"request": 4})
    assert await rt.set_conversation_budget(conversation.id, {}) == {}
    assert await rt.conversation_budget(conversation.id) == {}
    with pytest.raises(UsageError, match="no section 'agent'"):
        await rt_platform.admin.set_live("budgets", {"agent": {}})


async def test_a_cost_limit_on_an_unpriced_model_is_refused_not_guessed(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("budgets", {"agents": {"default": {"cost_usd": 1}}})
    turn = await rt_platform.chat("go", model=write_script({"text": "hi"}), **AUTO)
    run = await rt.runs.get(turn.run_id)
    assert (run.status, run.reason) == ("failed", "budget_unpriced")
    assert "the cost limit cannot be checked: genai-prices has no price for model" in run.detail


async def test_a_workflow_budget_bounds_its_runs_and_a_run_that_starts_one_pays_for_it(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    refused = await rt_platform.call_tool(
        "workflow", {"set": {"title": "D", "instruction": "i", "budget": {"tokens": 1}}}
    )
    assert refused.is_error and "budget: budget has no limit called 'tokens'" in refused.text
    inner = write_script(
        {"tool_calls": [call("echo", text="a")]},
        {"tool_calls": [call("echo", text="b")]},
        {"text": "Workflow wrap-up."},
        name="inner",
    )
    made = await rt_platform.call_tool(
        "workflow",
        {"set": {"title": "D", "instruction": "i", "model": inner, "budget": {"requests": 2}}},
    )
    assert not made.is_error, made.text
    workflow_id = made.data["workflow"]["workflow_id"]
    await rt_platform.admin.set_live("budgets", {"agents": {"default": {"requests": 50}}})
    outer = write_script(
        {"tool_calls": [call("workflow", run={"workflow_id": workflow_id, "wait_seconds": 60})]},
        {"text": "Started it."},
    )
    turn = await rt_platform.chat("go", model=outer, **AUTO)
    (result,) = results_of(turn.rows, "workflow")
    run = result["data"]["run"]
    assert (run["status"], run["reason"]) == ("partial", "budget_exhausted"), run
    assert "the limit of 2 model requests" in run["detail"]
    assert run["budget"]["limits"]["requests"] == {"spent": 3, "limit": 2}  # and the wrap-up
    assert run["cost_usd"] is None  # a scripted model has no price: none is guessed
    inner_budget = await rt.budgets.find(run["run_id"])
    outer_budget = await rt.budgets.find(turn.run_id)
    assert inner_budget is not None and outer_budget is not None
    assert inner_budget.charged_to == turn.run_id
    assert outer_budget.spent.requests == 2 + 3


async def test_an_approved_call_counts_against_the_parked_runs_budget(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    conversation = await rt.start_conversation()
    await rt.set_conversation_budget(conversation.id, {"per_tool": {"write_note": 0}})
    model = write_script(
        {"tool_calls": [call("write_note", path="data://note.md", text="hello")]},
        {"text": "I could not write it."},
    )
    turn = await rt_platform.chat(
        "write", model=model, conversation_id=conversation.id, profile="balanced"
    )
    assert turn.status == "parked"
    await rt_platform.decide_approval(turn.approvals[0], "approve")
    final = await rt.wait_run(turn.run_id)  # the approved call runs in the run's own job
    assert final.status == "finished"
    decided = await rt_platform.approval_result(turn.approvals[0])
    assert decided is not None and decided.error_code == "budget_exhausted", decided
    assert "the limit of 0 calls of 'write_note' is used up" in decided.text
    assert not (rt_platform.settings.drive_dir / "note.md").exists()


class FastTimers:
    """The wall clock at a thousandth of its pace: 300 s of limit fire after 0.3 s."""

    def call_later(self, delay: float, callback: Any) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(delay / 1000, callback)


async def test_a_run_at_its_wall_time_limit_wraps_up_and_ends_budget_exhausted(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    rt.timers = FastTimers()
    await rt_platform.admin.set_live("budgets", {"agents": {"default": {"wall_seconds": 300}}})
    model = write_script(
        {"tool_calls": [call("wait", ms=120_000)]},
        {"text": "Wrapped up: the wait was cut."},
        {"text": "never reached"},
    )
    started = time.monotonic()
    turn = await rt_platform.chat("go", model=model, **AUTO)
    assert time.monotonic() - started < 15
    run = await rt.runs.get(turn.run_id)
    assert (run.status, run.reason) == ("partial", "budget_exhausted"), run.detail
    assert "the limit of 300 seconds of wall time" in run.detail
    (waited,) = results_of(turn.rows, "wait")
    assert waited["status"] == "stopped"
    turns = [r.data["text"] for r in turn.rows if r.kind == "model_turn"]
    assert turns[-1] == "Wrapped up: the wait was cut."
    shown = await rt.run_budget(turn.run_id)
    assert shown is not None and 0 < shown["limits"]["wall_seconds"]["spent"] < 15


async def test_a_delegate_gets_the_wall_time_its_parent_has_left(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("budgets", {"profiles": {"auto": {"wall_seconds": 600}}})
    child = write_script({"text": "Child done."}, name="child")
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, budget={"wall_seconds": 9000})]},
        {"text": "Parent done."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert turn.status == "finished", turn.text
    (result,) = results_of(turn.rows, "delegate")
    mine = await rt.budgets.find(turn.run_id)
    theirs = await rt.budgets.find(result["data"]["run_id"])
    assert mine is not None and theirs is not None
    # The parent's running time up to its first response is recorded; the child gets the
    # rest, not the 9000 s asked for nor the parent's whole 600 s.
    assert theirs.limits.wall_seconds is not None
    assert 600 - 60 < theirs.limits.wall_seconds < 600
    assert 0 < theirs.spent.wall_seconds < 60
    # A child runs alongside its parent: its time is not added to the parent's.
    assert mine.spent.wall_seconds < 60


async def test_a_background_delegate_is_charged_to_its_parent_after_the_parent_ended(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("budgets", {"profiles": {"auto": {"requests": 20}}})
    child = write_script(
        {"tool_calls": [call("echo", text="a")]}, {"text": "Background done."}, name="child"
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, background=True)]},
        {"when_result_contains": "Started background subagent run", "text": "Started it."},
        {"when_message_contains": "Background done.", "text": "Reported."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert (turn.status, turn.text) == ("finished", "Started it."), turn.text
    (started,) = results_of(turn.rows, "delegate")
    child_run = started["data"]["run_id"]
    assert (await rt.wait_run(child_run)).status == "finished"
    await rt.wait_idle(turn.conversation_id)
    mine = await rt.budgets.find(turn.run_id)
    theirs = await rt.budgets.find(child_run)
    assert mine is not None and theirs is not None
    # What the parent had left when the child started (the parent goes on meanwhile).
    assert theirs.charged_to == turn.run_id
    assert theirs.limits.requests is not None and theirs.limits.requests <= 20 - 1
    assert theirs.spent.requests == 2 and theirs.spent.per_tool == {"echo": 1}
    assert mine.spent.requests == 2 + 2  # its own two turns and its child's
    assert mine.spent.per_tool == {"delegate": 1, "echo": 1}


async def test_cost_is_priced_by_genai_prices_and_a_cost_limit_is_reached(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    first = await rt_platform.chat("one", model=write_script({"text": "a"}), **AUTO)
    second = await rt_platform.chat("two", model=write_script({"text": "b"}), **AUTO)
    await rt.budgets.open_run(first.run_id, charged_to=None, limits=Budget(cost_usd=0.02))
    await rt.budgets.open_run(second.run_id, charged_to=first.run_id, limits=Budget())
    keeper = BudgetKeeper(rt.budgets, second.run_id, "openai:gpt-4o", Budget())

    def response(input_tokens: int, output_tokens: int) -> ModelResponse:
        usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        return ModelResponse(parts=[TextPart("x")], usage=usage)

    # gpt-4o at $2.50 a million input tokens and $10 a million output tokens.
    assert await keeper.charge(response(2000, 500)) is None  # $0.005 + $0.005
    reached = await keeper.charge(response(0, 1000))  # + $0.01: the parent's $0.02 is spent
    assert reached is not None
    assert f"the limit of 0.02 cost (USD) (spent 0.02), of parent run {first.run_id}" == reached
    parent = await rt.budgets.find(first.run_id)
    assert parent is not None and parent.spent.cost_usd == pytest.approx(0.02)
