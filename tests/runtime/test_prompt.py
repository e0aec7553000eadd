"""The prompt: system part, state blocks, background work, overlays, history, tool schemas."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

from corral.platform import Platform
from corral.runtime.background import BackgroundWork
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt import Prompt, PromptRequest, PromptView
from corral.runtime.prompt.history import NO_RESULT
from corral.runtime.prompt.system import RULES
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from tests.runtime.conftest import ScriptWriter, call


class Goal:
    name = "goal"

    def __init__(self) -> None:
        self.views: list[PromptView] = []

    async def render(self, view: PromptView) -> str | None:
        self.views.append(view)
        return f"<goal>Ship it (step {view.run.steps + 1})</goal>"


class Shells:
    async def running_work(self, conversation_id: str) -> list[BackgroundWork]:
        return [{"kind": "shell", "id": "sh_7", "title": "npm run build", "started_at": "12:00"}]


async def build(rt: Runtime, run_id: str, *, user: str | None = None) -> Prompt:
    run = await rt.runs.get(run_id)
    caller = await rt.kernel.caller(user)
    state = await rt.kernel.config.dispatch_state()
    return await rt.prompt.build(
        PromptRequest(
            conversation_id=run.conversation_id,
            run=run,
            agent=run.agent,
            instructions="Be brief.",
            caller=caller,
            tools=await rt.visible_tools(run, caller),
            media=MediaSupport(),
            sources=state.sources,
            live=state.live,
            background=rt.background_work,
        )
    )


async def fill_ten_thousand_rows(rt: Runtime, cid: str) -> None:
    """2,500 rounds of question, answer, an ``echo`` call ``k<i>`` and its result."""
    ok = {"content": [{"type": "text", "text": "x" * 200}], "status": "ok"}
    batch: list[NewRow] = []
    for i in range(2_500):
        batch += [
            NewRow(kind="user_message", data={"text": f"question {i}"}),
            NewRow(kind="model_turn", data={"text": f"answer {i}"}),
            NewRow(kind="tool_call", call_id=f"k{i}", data={"tool": "echo", "args": {"text": "x"}}),
            NewRow(kind="tool_result", call_id=f"k{i}", data={"tool": "echo", "result": ok}),
        ]
        if len(batch) >= 1_000:
            await rt.append(cid, batch)
            batch = []


async def test_the_system_part_and_tool_schemas(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    goal = Goal()
    rt.prompt.add_state_block(goal)
    rt.add_background_work(Shells())
    await rt_platform.admin.ensure_agent("default", instructions="Be brief.")
    await rt_platform.admin.set_tool_enabled("default", "explode", False)
    turn = await rt_platform.chat(
        "hi", model=write_script({"tool_calls": [call("echo", text="x")]})
    )
    prompt = await build(rt, turn.run_id)
    static, dynamic = (part.content for part in prompt.instructions)
    assert static == f"Be brief.\n\n{RULES}"
    assert dynamic.index("<goal>") < dynamic.index("<background_work>") < dynamic.index("<session")
    assert "- shell sh_7: npm run build (running since 12:00)" in dynamic
    assert "Steps: 2 of 50 used; this is step 3." in dynamic
    tools = {t.name: t for t in prompt.parameters.function_tools}
    assert "explode" not in tools and "echo" in tools
    echo = rt_platform.registry.tools["echo"].spec.model_schema()
    assert tools["echo"].description == echo["description"]
    assert tools["echo"].parameters_json_schema == echo["input_schema"]
    assert goal.views and goal.views[0].conversation_id == turn.conversation_id


async def test_overlays_change_what_the_model_reads_not_the_timeline(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    def trim(rows: Sequence[TimelineRow], view: PromptView) -> Sequence[TimelineRow]:
        out = []
        for row in rows:
            if row.kind == "tool_result":
                result = {**row.data["result"], "content": [{"type": "text", "text": "[trimmed]"}]}
                row = replace(row, data={**row.data, "result": result})
            out.append(row)
        return out

    rt.prompt.add_overlay(trim)
    model = write_script(
        {"tool_calls": [call("echo", text="a long output")]},
        [{"when_result_contains": "[trimmed]", "text": "saw the trim"}, {"text": "saw it all"}],
    )
    turn = await rt_platform.chat("go", model=model)
    assert turn.text == "saw the trim"
    stored = next(r for r in turn.rows if r.kind == "tool_result")
    assert stored.data["result"]["content"][0]["text"] == "a long output"


def row(seq: int, kind: Any, call_id: str | None = None, **data: Any) -> TimelineRow:
    return TimelineRow(seq=seq, kind=kind, data=data, call_id=call_id)


async def test_history_pairs_every_call_with_a_return(rt: Runtime) -> None:
    from corral.runtime.prompt.history import History, RenderContext

    owner = await rt.kernel.caller()
    state = await rt.kernel.config.dispatch_state()
    context = RenderContext(
        media=MediaSupport(), reader=rt.prompt.reader, caller=owner, sources=state.sources
    )
    ok = {"content": [{"type": "text", "text": "fine"}], "status": "ok"}
    rows = [
        row(1, "user_message", text="hi"),
        row(2, "model_turn", text="two calls"),
        row(3, "tool_call", "c1", tool="echo", args={}),
        row(4, "tool_call", "c2", tool="echo", args={}),
        row(5, "tool_result", "c1", tool="echo", result=ok),
        row(6, "tool_result", "zz", tool="echo", result=ok),  # no such call: left out
        row(7, "card", card="run_ended"),
        row(8, "user_message", text="again"),
    ]
    history = History()
    messages = history.messages(rows, context)
    assert [type(m) for m in messages] == [ModelRequest, ModelResponse, ModelRequest]
    response = messages[1]
    assert isinstance(response, ModelResponse)
    assert [p.tool_call_id for p in response.parts if isinstance(p, ToolCallPart)] == ["c1", "c2"]
    returns = [p for p in messages[2].parts if isinstance(p, ToolReturnPart)]
    assert {(p.tool_call_id, p.content) for p in returns} == {("c1", "fine"), ("c2", NO_RESULT)}
    # Unchanged rows reuse their messages; a changed row rebuilds only its own message.
    again = history.messages(rows, context)
    assert all(a is b for a, b in zip(messages, again, strict=True))
    edited = [*rows[:7], replace(rows[7], data={"text": "changed"})]
    third = history.messages(edited, context)
    assert third[0] is messages[0] and third[1] is messages[1] and third[2] is not messages[2]


async def test_a_warm_ten_thousand_row_build_reuses_every_earlier_message(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    # Speed itself is measured in bench/prompt.py; this checks what makes it fast: a build
    # after one new row renders only that row's message and reuses every earlier one.
    turn = await rt_platform.chat("start", model=write_script({"text": "ok"}))
    cid = turn.conversation_id
    await fill_ten_thousand_rows(rt, cid)
    cold = await build(rt, turn.run_id)  # reads every row once
    await rt.append(cid, [NewRow(kind="user_message", data={"text": "one more"})])
    warm = await build(rt, turn.run_id)
    assert len(cold.messages) > 4_900
    kept = len(cold.messages) - 1  # the last request message grows by the new row
    assert all(a is b for a, b in zip(cold.messages[:kept], warm.messages[:kept], strict=True))
    assert warm.messages[-1] is not cold.messages[-1]
    assert "one more" in str(warm.messages[-1])


def shape(messages: Sequence[Any]) -> list[Any]:
    """Messages without timestamps, for comparing two builds."""
    return [
        (
            type(m).__name__,
            [
                (type(p).__name__, getattr(p, "content", None), getattr(p, "tool_call_id", None))
                for p in m.parts
            ],
        )
        for m in messages
    ]


KINDS = ["user_message", "model_turn", "tool_call", "tool_result", "card", "background_report"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(KINDS), max_size=40))
async def test_incremental_builds_equal_full_builds(rt: Runtime, kinds_: list[str]) -> None:
    from corral.runtime.prompt.history import History, RenderContext

    owner = await rt.kernel.caller()
    state = await rt.kernel.config.dispatch_state()
    context = RenderContext(
        media=MediaSupport(), reader=rt.prompt.reader, caller=owner, sources=state.sources
    )
    ok = {"content": [{"type": "text", "text": "r"}], "status": "ok"}
    growing = History()
    calls: list[str] = []
    for seq, kind in enumerate(kinds_, start=1):
        if kind == "tool_call":
            calls.append(f"c{seq}")
            new = row(seq, kind, f"c{seq}", tool="echo", args={})
        elif kind == "tool_result":
            new = row(seq, kind, calls[-1] if calls else "none", tool="echo", result=ok)
        else:
            new = row(seq, kind, text=f"t{seq}", title="r", source="shell", source_id="s")
        growing.extend([new])
        incremental = growing.messages(growing.rows, context)
        fresh = History()
        fresh.extend(growing.rows)
        assert shape(incremental) == shape(fresh.messages(fresh.rows, context))
