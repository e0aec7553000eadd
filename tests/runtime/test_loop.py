"""The loop: multi-step runs with real tools, concurrency, budgets, limits, Stop, failures."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.events import Event
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call, gate, kinds


async def test_a_multi_step_run_with_real_tools(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    model = write_script(
        {"text": "First an echo.", "tool_calls": [call("echo", text="ping")]},
        {
            "when_result_contains": "ping",
            "text": "Now two at once.",
            "tool_calls": [call("sync_echo", n=7), call("echo", text="pong", repeat=2)],
        },
        [{"when_result_contains": "pongpong", "text": "All done: ping, 7, pongpong."}],
    )
    turn = await rt_platform.chat("go", model=model)
    assert turn.status == "finished" and turn.steps == 3
    assert turn.text == "All done: ping, 7, pongpong."
    assert kinds(turn.rows) == [
        "user_message",
        "model_turn",
        "tool_call",
        "tool_result",
        "model_turn",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "model_turn",
        "card",
    ]
    results = {r.data["tool"]: r.data["result"] for r in turn.rows if r.kind == "tool_result"}
    assert results["sync_echo"]["data"] == {"n": 7, "tool": "sync_echo"}
    seqs = [r.seq for r in await rt.rows(turn.conversation_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    run = await rt.runs.get(turn.run_id)
    assert run.steps == 3 and run.status == "finished" and run.ended_at is not None
    assert (await rt.conversations.get(turn.conversation_id)).active_run_id is None


async def test_calls_of_one_turn_run_concurrently(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    # Each call waits at a barrier for the other: run one after the other, they never meet.
    model = write_script(
        {"tool_calls": [call("meet", group="g", parties=2), call("meet", group="g", parties=2)]},
        {"text": "met"},
    )
    turn = await asyncio.wait_for(rt_platform.chat("meet", model=model), timeout=20)
    assert turn.status == "finished"
    texts = [r.data["result"]["content"][0]["text"] for r in turn.rows if r.kind == "tool_result"]
    assert texts == ["met at g", "met at g"]


async def test_the_step_budget_ends_a_run_partial(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.ensure_agent("busy", instructions="Loop.", step_budget=3)
    model = write_script({"tool_calls": [call("echo", text="again")]}, after_end="repeat_last")
    turn = await rt_platform.chat("loop forever", agent="busy", model=model)
    assert (turn.status, turn.reason, turn.steps) == ("partial", "step_budget", 3)
    assert "step budget of 3" in turn.detail
    assert kinds(turn.rows).count("tool_result") == 3
    ended = [r for r in turn.rows if r.kind == "card"][-1]
    assert ended.data == {
        "card": "run_ended",
        "status": "partial",
        "reason": "step_budget",
        "detail": turn.detail,
    }


async def test_the_live_step_budget_applies_without_an_agent_budget(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("run_step_budget", 2)
    model = write_script({"tool_calls": [call("echo", text="x")]}, after_end="repeat_last")
    turn = await rt_platform.chat("loop", model=model)
    assert (turn.status, turn.reason, turn.steps) == ("partial", "step_budget", 2)


async def test_the_wall_clock_limit_ends_a_run_partial(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("run_wall_clock_limit_s", 1)
    model = write_script({"tool_calls": [call("wait", ms=120_000)]}, {"text": "never"})
    started = time.monotonic()
    turn = await rt_platform.chat("take long", model=model)
    assert time.monotonic() - started < 15
    assert (turn.status, turn.reason) == ("partial", "wall_clock")
    result = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    assert result["status"] == "stopped"


async def test_stop_during_a_long_tool_call(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Waiting.", "tool_calls": [call("wait", ms=120_000)]})
    conversation = await rt.start_conversation(model=model)
    started = asyncio.Event()
    seen: list[Event] = []

    def on_event(event: Event) -> None:
        seen.append(event)
        if event["type"] == "output" and event["text"] == "started":
            started.set()

    chat = asyncio.create_task(
        rt.chat("wait a while", conversation_id=conversation.id, on_event=on_event)
    )
    await started.wait()
    run_id = next(e["run_id"] for e in seen if e["type"] == "run")
    began = time.monotonic()
    stopped = await rt.stop(run_id)
    assert stopped.status == "stopped" and stopped.reason == "stopped"
    turn = await chat
    assert time.monotonic() - began < 10
    assert turn.status == "stopped"
    result = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    assert result["status"] == "stopped"
    assert (await rt.conversations.get(conversation.id)).active_run_id is None
    # Stop of an ended run changes nothing.
    assert (await rt.stop(run_id)).status == "stopped"


async def test_a_model_that_fails_fails_the_run(rt_platform: Platform, rt: Runtime) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("no route to the model")

    rt.models.register("test:broken", FunctionModel(broken))
    turn = await rt_platform.chat("hello", model="test:broken")
    assert (turn.status, turn.reason, turn.steps) == ("failed", "model_error", 0)
    assert "before its first step" in turn.detail and "no route to the model" in turn.detail


async def test_a_bad_model_string_is_refused_before_anything_is_written(
    rt_platform: Platform, rt: Runtime
) -> None:
    with pytest.raises(UsageError, match="provider:model"):
        await rt_platform.chat("hello", model="nonsense")
    with pytest.raises(UsageError, match="does not exist"):
        await rt_platform.chat("hello", model="script:/no/such/script.json")


async def test_a_conversation_takes_one_turn_at_a_time(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [call("gate", name="hold")]}, {"text": "released"})
    conversation = await rt.start_conversation(model=model)
    first = await rt.start_chat("one", conversation_id=conversation.id)
    with pytest.raises(UsageError, match="turn in flight"):
        await rt.chat("two", conversation_id=conversation.id)
    gate(rt_platform, "hold").set()
    assert (await rt.wait_run(first.id)).status == "finished"
    second = await rt.chat("two", conversation_id=conversation.id)
    assert second.status == "finished"


async def test_runs_advance_at_most_the_live_concurrency_at_once(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("runs_max_concurrent", 1)
    model = write_script({"tool_calls": [call("gate", name="one")]}, {"text": "done"})
    first = await rt.start_chat("a", model=model)
    second = await rt.start_chat("b", model=write_script({"text": "second"}))
    async with rt.events.subscribe(first.conversation_id) as events:
        async for event in events:
            if event["type"] == "output":
                break  # the first run holds the only slot
    assert (await rt.runs.get(second.id)).status == "queued"
    gate(rt_platform, "one").set()
    assert (await rt.wait_run(first.id)).status == "finished"
    assert (await rt.wait_run(second.id)).status == "finished"
