"""delegate: a child run with its own loop, narrow-only reach, answers, parking, folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

import corral
from corral.platform import Platform
from corral.runtime.delegation import Delegation
from corral.runtime.runtime import Runtime
from corral.store import delegation_tables as dt
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call, gate

AUTO = {"profile": "auto"}


def delegate_results(rows: Any) -> list[dict[str, Any]]:
    return [
        r.data["result"]
        for r in rows
        if r.kind == "tool_result" and r.data.get("tool") == "delegate"
    ]


async def test_a_foreground_child_answers_the_parent_and_leaves_its_folder(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    child = write_script(
        {"text": "Draft.", "tool_calls": [call("echo", text="x")]},
        {"text": "The child says hi.", "tool_calls": [call("echo", text="y")]},
        {"text": ""},  # a step without text does not erase the answer before it
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="Say hi", context="You are polite.", model=child)]},
        {"when_result_contains": "The child says hi.", "text": "Parent done."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert (turn.status, turn.text) == ("finished", "Parent done.")
    (result,) = delegate_results(turn.rows)
    assert result["status"] == "ok"
    data = result["data"]
    assert data["status"] == "finished" and data["steps"] == 3
    transcript = data["transcript_uri"]
    assert transcript.startswith(f"data://.corral/conversations/{turn.conversation_id}/runs/")
    folder = data_dir / "drive" / transcript.removeprefix("data://").rsplit("/", 1)[0]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "finished" and meta["task"] == "Say hi"
    assert meta["parent_conversation_id"] == turn.conversation_id
    lines = [json.loads(line) for line in (folder / "messages.jsonl").read_text().splitlines()]
    assert lines[0]["kind"] == "user_message"
    assert lines[0]["data"]["text"] == "You are polite.\n\nSay hi"
    child_run = await rt.runs.get(data["run_id"])
    assert (child_run.kind, child_run.parent_run_id) == ("delegate", turn.run_id)
    assert child_run.narrowing.subagent
    # The child's own conversation is not one of the person's conversations.
    listed = [c.id for c in await rt.list_conversations()]
    assert listed == [turn.conversation_id]


async def test_every_named_tool_is_answered_and_hidden_reads_as_missing(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_tool_enabled("default", "explode", False)  # hidden from caller
    child = write_script({"text": "ok"}, name="child")
    parent = write_script(
        {
            "tool_calls": [
                call(
                    "delegate",
                    task="t",
                    model=child,
                    tools=["echo", "ask_question", "no_such_tool", "explode", "gate"],
                    blocked_tools=["gate"],
                )
            ]
        },
        {"text": "done"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert "'ask_question' (barred from every subagent)" in text
    assert "'no_such_tool' (not in the subagent's catalog)" in text
    assert "'explode' (not in the subagent's catalog)" in text
    assert "'gate' (removed by this call's blocked_tools)" in text
    child_run = await rt.runs.get(result["data"]["run_id"])
    assert child_run.narrowing.tools == frozenset({"echo"})


async def test_a_list_with_no_survivors_starts_no_child(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", tools=["ask_question", "nope"])]},
        {"text": "done"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    assert result["error_code"] == "invalid_arguments"
    assert "no subagent was started" in result["content"][0]["text"]
    async with rt_platform.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(dt.Delegation)) == 0


async def test_an_empty_tools_list_is_refused_by_the_schema(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    parent = write_script({"tool_calls": [call("delegate", task="t", tools=[])]}, {"text": "x"})
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    assert result["error_code"] == "invalid_arguments" and "/tools" in result["content"][0]["text"]


async def test_a_child_calling_a_tool_outside_its_reach_is_refused_when_it_calls(
    rt_platform: Platform, write_script: ScriptWriter, data_dir: Path
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://x.md", text="no")]},
        {"when_result_contains": "not available here", "text": "I could not write."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, tools=["echo"])]},
        {"text": "done"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    assert "I could not write." in result["content"][0]["text"]
    assert not (data_dir / "drive" / "x.md").exists()


async def test_ask_question_never_reaches_a_grandchild_and_detaching_is_top_level_only(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    grandchild = write_script(
        {"tool_calls": [call("ask_question", questions=[{"question": "?", "header": "h"}])]},
        {"when_result_contains": "not available here", "text": "No one to ask."},
        name="grandchild",
    )
    child = write_script(
        {"tool_calls": [call("delegate", task="ask", model=grandchild, background=True)]},
        {"when_result_contains": "No one to ask.", "text": "Grandchild said: no one to ask."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]}, {"text": "done"}
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert turn.status == "finished"
    (result,) = delegate_results(turn.rows)
    assert "Grandchild said: no one to ask." in result["content"][0]["text"]
    child_id = result["data"]["conversation_id"]
    child_rows = await rt_platform.runtime.conversations.rows(child_id)
    (inner,) = delegate_results(child_rows)
    assert "ran in the foreground" in inner["content"][0]["text"]


async def test_a_long_answer_keeps_both_ends_with_a_marker(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("delegate_answer_cap_chars", 1000)
    child = write_script({"text": "A" * 1500 + "Z" * 1500}, name="child")
    parent = write_script({"tool_calls": [call("delegate", task="t", model=child)]}, {"text": "x"})
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert "A" * 500 in text and "Z" * 500 in text
    assert "A" * 501 not in text and "Z" * 501 not in text
    assert "2,000 of 3,000 characters dropped" in text
    assert result["data"]["transcript_uri"] in text


async def test_an_inner_approval_parks_child_and_parent_across_a_restart(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://note.md", text="hello")]},
        {"when_result_contains": "wrote", "text": "The note is written."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="write it", model=child)]},
        {"when_result_contains": "The note is written.", "text": "Parent saw the note."},
    )
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("go", model=parent, profile="balanced")
        assert turn.status == "parked"  # the delegate call itself asks first
        await platform.decide_approval(turn.approvals[0], "approve")
        # The parent's own job runs the approved delegate call; its child parks in turn.
        parent_run = await platform.runtime.wait_run(turn.run_id)
        assert parent_run.status == "parked"
        (wait,) = parent_run.waiting
        assert wait.kind == "delegate"
        child_run = await platform.runtime.runs.get(wait.id)
        assert child_run.status == "parked"
        (inner,) = child_run.waiting
        assert (inner.kind, inner.tool) == ("approval", "write_note")
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        assert (await rt.runs.get(child_run.id)).status == "parked"
        await platform.decide_approval(inner.id, "approve")
        assert (await rt.wait_run(child_run.id)).status == "finished"
        final = await rt.wait_run(turn.run_id)
        assert final.status == "finished"
        assert (await rt.result(turn.run_id)).text == "Parent saw the note."
    assert (data_dir / "drive" / "note.md").read_text() == "note:hello"


async def test_a_background_run_reports_and_the_parent_continues_by_itself(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    child = write_script({"text": "Background answer: 42."}, name="child")
    parent = write_script(
        {"tool_calls": [call("delegate", task="compute", model=child, background=True)]},
        {"when_result_contains": "Started background subagent run", "text": "Started it."},
        {"when_message_contains": "Background answer: 42.", "text": "The answer is 42."},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    assert (turn.status, turn.text) == ("finished", "Started it.")
    (started,) = delegate_results(turn.rows)
    data = started["data"]
    assert data["background"] and data["status_uri"].endswith("/meta.json")
    await rt.wait_run(data["run_id"])
    await rt.wait_idle(turn.conversation_id)
    rows = await rt.rows(turn.conversation_id)
    report = next(r for r in rows if r.kind == "background_report")
    assert report.data["source"] == "delegate" and report.data["source_id"] == data["run_id"]
    assert "Background answer: 42." in report.data["text"]
    last = (await rt.runs.list_runs(conversation_id=turn.conversation_id, limit=1))[0]
    assert last.trigger == "report" and last.user_id == turn.rows[0].user_id
    assert (await rt.result(last.id)).text == "The answer is 42."
    folder = data_dir / "drive" / data["status_uri"].removeprefix("data://")
    assert json.loads(folder.read_text())["status"] == "finished"


async def test_a_background_report_waits_for_the_turn_in_flight(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    child = write_script({"text": "Child finished early."}, name="child")
    parent = write_script(
        {
            "tool_calls": [
                call("delegate", task="t", model=child, background=True),
                call("gate", name="hold"),
            ]
        },
        {"text": "Turn done."},
        {"when_message_contains": "Child finished early.", "text": "Read the report."},
    )
    conversation = await rt.start_conversation(model=parent, profile="auto")
    async with rt.events.subscribe(conversation.id) as events:
        run = await rt.start_chat("go", conversation_id=conversation.id)
        gate_running = delegate_returned = False
        async for event in events:
            gate_running = gate_running or event["type"] == "output"
            row = event.get("row") or {}
            delegate_returned = delegate_returned or (
                row.get("kind") == "tool_result" and row["data"].get("tool") == "delegate"
            )
            if gate_running and delegate_returned:
                break  # the child is started and the turn is still in flight
    async with rt_platform.sessions() as session:
        (delegation,) = await session.scalars(select(dt.Delegation))
    (child_run,) = await rt.runs.list_runs(conversation_id=delegation.conversation_id)
    assert (await rt.wait_run(child_run.id)).status == "finished"
    queued = await rt.deliveries.list_deliveries(conversation.id, status="queued")
    assert len(queued) == 1  # the report waits: the parent's turn is still in flight
    gate(rt_platform, "hold").set()
    await rt.wait_run(run.id)
    await rt.wait_idle(conversation.id)
    order = [r.kind for r in await rt.rows(conversation.id)]
    assert order.index("background_report") > order.index("model_turn", 2)
    assert (await rt.result(run.id)).text == "Turn done."


async def test_background_runs_past_the_limit_are_refused(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("delegate_background_max", 0)
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", background=True)]}, {"text": "ok"}
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    assert result["error_code"] == "delegate_background_limit"
    async with rt_platform.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(dt.Delegation)) == 0


async def test_the_last_step_is_a_text_only_wrap_up_and_the_answer_says_partial(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"text": "Working.", "tool_calls": [call("echo", text="x")]},
        {"text": "Summary: half done; the rest needs a second pass."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, max_steps=2)]}, {"text": "ok"}
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert text.startswith("Partial answer: the subagent was cut off")
    assert "Summary: half done; the rest needs a second pass." in text
    child_run = await rt.runs.get(result["data"]["run_id"])
    assert (child_run.status, child_run.reason, child_run.steps) == ("partial", "step_budget", 2)
    rows = await rt.conversations.rows(child_run.conversation_id)
    assert [r.kind for r in rows].count("tool_call") == 1  # the wrap-up called no tool


async def test_a_wrap_up_that_does_not_land_is_cut_and_reported_partial(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, monkeypatch: Any
) -> None:
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from corral.runtime import loop

    monkeypatch.setattr(loop, "WRAP_UP_SECONDS", 0.2)
    never = asyncio.Event()

    async def slow_child(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            await never.wait()  # the wrap-up turn never answers
        return ModelResponse(
            parts=[TextPart("Started on it."), ToolCallPart("echo", {"text": "x"}, "c1")]
        )

    rt.models.register("function:slow-child", FunctionModel(slow_child))
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model="function:slow-child", max_steps=2)]},
        {"text": "ok"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert result["status"] == "ok" and not result["is_error"]  # partial, never a failure
    assert text.startswith("Partial answer") and "Started on it." in text


async def test_stopping_a_parked_child_answers_the_waiting_parent(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]}, name="child"
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]},
        {"when_result_contains": "stopped", "text": "The subagent was stopped."},
    )
    conversation = await rt.start_conversation(model=parent, profile="balanced")
    await rt.conversations.update(conversation.id, profile="balanced")
    turn = await rt_platform.chat("go", conversation_id=conversation.id)
    await rt_platform.decide_approval(turn.approvals[0], "approve")  # the delegate call
    (wait,) = (await rt.wait_run(turn.run_id)).waiting
    child_run = await rt.runs.get(wait.id)
    (inner,) = child_run.waiting
    stopped = await rt_platform.services.require(Delegation).stop(child_run.id)
    assert stopped.status == "stopped"
    assert (await rt_platform.approvals.get(inner.id)).status == "closed"
    final = await rt.wait_run(turn.run_id)
    assert final.status == "finished"
    assert (await rt.result(turn.run_id)).text == "The subagent was stopped."
    assert not (data_dir / "drive" / "n.md").exists()


async def test_a_running_background_child_ends_partial_when_the_platform_closes(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"text": "Begun.", "tool_calls": [call("gate", name="never")]}, name="child"
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, background=True)]},
        {"text": "Detached."},
        {"when_message_contains": "partial", "text": "It was cut by a restart."},
    )
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation(model=parent, profile="auto")
        turn = await platform.chat("go", conversation_id=conversation.id)
        (started,) = delegate_results(turn.rows)
        child_run_id = started["data"]["run_id"]
        child_conversation = started["data"]["conversation_id"]
        async with rt.events.subscribe(child_conversation) as events:
            rows = await rt.conversations.rows(child_conversation)
            if not any(r.kind == "tool_call" for r in rows):
                async for event in events:
                    if event["type"] == "output":
                        break  # the gate call is running: the child is mid-run
        # A mid-run read of the transcript shows the work so far.
        transcript = data_dir / "drive" / started["data"]["transcript_uri"][len("data://") :]
        grown = [json.loads(line)["kind"] for line in transcript.read_text().splitlines()]
        assert grown == ["user_message", "model_turn", "tool_call"]
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        rt = platform.runtime
        child_run = await rt.runs.get(child_run_id)
        assert (child_run.status, child_run.reason) == ("partial", "shutdown")
        rows = await rt.conversations.rows(child_conversation)
        assert [r.kind for r in rows][:3] == ["user_message", "model_turn", "tool_call"]
        await rt.wake_all()
        await rt.wait_idle(conversation.id)
        parent_rows = await rt.rows(conversation.id)
        report = next(r for r in parent_rows if r.kind == "background_report")
        assert "partial" in report.data["title"] and "Begun." in report.data["text"]
        last = (await rt.runs.list_runs(conversation_id=conversation.id, limit=1))[0]
        assert (await rt.result(last.id)).text == "It was cut by a restart."
    meta = data_dir / "drive" / started["data"]["status_uri"].removeprefix("data://")
    assert json.loads(meta.read_text())["status"] == "partial"


async def test_denying_an_inner_approval_lets_the_child_continue_with_the_refusal(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]},
        {"when_result_contains": "denied", "text": "Not allowed; I left the note alone."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]},
        {"when_result_contains": "left the note alone", "text": "Understood."},
    )
    turn = await rt_platform.chat("go", model=parent, profile="balanced")
    await rt_platform.decide_approval(turn.approvals[0], "approve")  # the delegate call
    (wait,) = (await rt.wait_run(turn.run_id)).waiting
    (inner,) = (await rt.runs.get(wait.id)).waiting
    await rt_platform.decide_approval(inner.id, "deny", note="not now")
    assert (await rt.wait_run(wait.id)).status == "finished"  # the child goes on first
    assert (await rt.wait_run(turn.run_id)).status == "finished"
    assert (await rt.result(turn.run_id)).text == "Understood."
    assert not (data_dir / "drive" / "n.md").exists()


async def test_a_parked_background_child_adopts_its_parents_stricter_profile(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]},
        {"text": "done"},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, background=True)]},
        {"text": "Detached."},
        {"text": "Reported."},
    )
    turn = await rt_platform.chat("go", model=parent, profile="balanced")
    await rt_platform.decide_approval(turn.approvals[0], "approve")  # the delegate call
    await rt.wait_run(turn.run_id)
    async with rt_platform.sessions() as session:
        (delegation,) = await session.scalars(select(dt.Delegation))
    (child_run,) = await rt.runs.list_runs(conversation_id=delegation.conversation_id)
    child_run = await rt.wait_run(child_run.id)
    assert (child_run.status, child_run.profile) == ("parked", "balanced")
    await rt.conversations.update(turn.conversation_id, profile="safe")
    (inner,) = child_run.waiting
    await rt_platform.decide_approval(inner.id, "approve")
    assert (await rt.wait_run(child_run.id)).profile == "safe"


class FastTimers:
    """The wall clock at a thousandth of its pace: 300 s of limit fire after 0.3 s."""

    def call_later(self, delay: float, callback: Any) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(delay / 1000, callback)


async def test_the_soft_timeout_gives_one_wrap_up_turn_and_a_partial_answer(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    rt.timers = FastTimers()
    child = write_script(
        {"text": "Waiting on the build.", "tool_calls": [call("gate", name="never-opens")]},
        {"text": "Summary: the build never finished; rerun it."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, timeout_ms=300_000)]},
        {"text": "ok"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert text.startswith("Partial answer") and "wall-clock limit of 300 s" in text
    assert "Summary: the build never finished; rerun it." in text
    child_run = await rt.runs.get(result["data"]["run_id"])
    assert (child_run.status, child_run.reason, child_run.steps) == ("partial", "wall_clock", 2)


async def test_a_child_whose_model_fails_is_reported_failed_with_the_reason_first(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def unavailable(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("the model is not available to this project")

    rt.models.register("function:unavailable", FunctionModel(unavailable))
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model="function:unavailable")]},
        {"text": "ok"},
    )
    turn = await rt_platform.chat("go", model=parent, **AUTO)
    (result,) = delegate_results(turn.rows)
    text = result["content"][0]["text"]
    assert result["is_error"] and result["error_code"] == "delegate_failed"
    assert text.startswith("The subagent run failed: the model 'function:unavailable' failed")
    assert "before its first step" in text and "not available to this project" in text
