"""OpenTelemetry spans of a scripted run, caught by the SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import error_attributes as err
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import SpanKind, StatusCode

import corral
from corral.platform import Platform
from corral.tracing import Attr, Op, use_provider
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call

SECRET = "s3cr3t-value-123456"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(provider)
    try:
        yield caught
    finally:
        use_provider(None)
        provider.shutdown()


@pytest.fixture
async def traced(
    data_dir: Path, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Platform]:
    monkeypatch.setenv("DEMO_API_TOKEN", SECRET)
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as opened:
        yield opened


def named(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def children(spans: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[ReadableSpan]:
    pid = parent.context.span_id
    return [s for s in spans if s.parent is not None and s.parent.span_id == pid]


def ancestors(spans: tuple[ReadableSpan, ...], span: ReadableSpan) -> list[ReadableSpan]:
    by_id = {s.context.span_id: s for s in spans}
    found: list[ReadableSpan] = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        found.append(span)
    return found


def test_the_names_are_the_conventions_current_ones() -> None:
    assert Attr.OPERATION == gen_ai.GEN_AI_OPERATION_NAME
    assert Attr.PROVIDER == gen_ai.GEN_AI_PROVIDER_NAME
    assert Attr.AGENT_NAME == gen_ai.GEN_AI_AGENT_NAME
    assert Attr.CONVERSATION_ID == gen_ai.GEN_AI_CONVERSATION_ID
    assert Attr.REQUEST_MODEL == gen_ai.GEN_AI_REQUEST_MODEL
    assert Attr.RESPONSE_MODEL == gen_ai.GEN_AI_RESPONSE_MODEL
    assert Attr.RESPONSE_ID == gen_ai.GEN_AI_RESPONSE_ID
    assert Attr.FINISH_REASONS == gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
    assert Attr.INPUT_TOKENS == gen_ai.GEN_AI_USAGE_INPUT_TOKENS
    assert Attr.OUTPUT_TOKENS == gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
    assert Attr.TOOL_NAME == gen_ai.GEN_AI_TOOL_NAME
    assert Attr.TOOL_CALL_ID == gen_ai.GEN_AI_TOOL_CALL_ID
    assert Attr.TOOL_TYPE == gen_ai.GEN_AI_TOOL_TYPE
    assert Attr.TOOL_ARGUMENTS == gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
    assert Attr.TOOL_RESULT == gen_ai.GEN_AI_TOOL_CALL_RESULT
    assert Attr.ERROR_TYPE == err.ERROR_TYPE
    ops = gen_ai.GenAiOperationNameValues
    assert (Op.INVOKE_AGENT, Op.CHAT, Op.EXECUTE_TOOL) == (
        ops.INVOKE_AGENT.value,
        ops.CHAT.value,
        ops.EXECUTE_TOOL.value,
    )


async def test_a_run_is_one_trace_of_agent_model_tool_and_stage_spans(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    model = write_script(
        {"text": "Echo first.", "tool_calls": [call("echo", text="ping")]},
        {"when_result_contains": "ping", "text": "Done."},
    )
    await traced.admin.set_live("trace_stages", "all")
    turn = await traced.chat("go", model=model)
    assert turn.status == "finished"
    spans = exporter.get_finished_spans()

    (run,) = named(spans, "invoke_agent ")
    assert run.name == "invoke_agent default" and run.parent is None
    assert run.attributes is not None
    assert run.attributes[gen_ai.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert run.attributes[gen_ai.GEN_AI_AGENT_NAME] == "default"
    assert run.attributes[gen_ai.GEN_AI_CONVERSATION_ID] == turn.conversation_id
    assert run.attributes[Attr.RUN_ID] == turn.run_id
    assert run.attributes[Attr.RUN_STATUS] == "finished"
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}

    chats = [s for s in children(spans, run) if s.name.startswith("chat ")]
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT and chat.attributes is not None
        assert chat.attributes[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
        assert chat.attributes[gen_ai.GEN_AI_PROVIDER_NAME]
        assert chat.attributes[gen_ai.GEN_AI_REQUEST_MODEL]
        assert chat.name == f"chat {chat.attributes[gen_ai.GEN_AI_REQUEST_MODEL]}"
        assert isinstance(chat.attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS], int)
        assert isinstance(chat.attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS], int)

    (tool,) = [s for s in children(spans, run) if s.name.startswith("execute_tool ")]
    assert tool.name == "execute_tool echo" and tool.attributes is not None
    assert tool.attributes[gen_ai.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert tool.attributes[gen_ai.GEN_AI_TOOL_NAME] == "echo"
    assert tool.attributes[gen_ai.GEN_AI_TOOL_TYPE] == "function"
    call_row = next(r for r in turn.rows if r.kind == "tool_call")
    assert tool.attributes[gen_ai.GEN_AI_TOOL_CALL_ID] == call_row.call_id
    assert err.ERROR_TYPE not in tool.attributes
    assert tool.status.status_code is not StatusCode.ERROR

    # Every stage of the chain, in pipeline order, inside the call's span.
    stage_spans = sorted(named(spans, "stage "), key=lambda s: s.start_time or 0)
    chained = [stage.name for stage in traced.kernel.dispatcher.chained]
    assert [(s.attributes or {}).get(Attr.STAGE) for s in stage_spans] == chained
    assert {"visibility", "validation", "grants", "approval", "handler"} <= set(chained)
    for stage in stage_spans:
        assert stage.name == f"stage {(stage.attributes or {})[Attr.STAGE]}"
        decision = "ran" if stage.name == "stage handler" else "passed"
        assert (stage.attributes or {})[Attr.STAGE_DECISION] == decision
        assert stage.parent is not None and stage.parent.span_id == tool.context.span_id
        assert tool.start_time is not None and stage.start_time is not None
        assert tool.start_time <= stage.start_time


async def test_content_is_left_out_unless_an_admin_turns_it_on(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    await traced.call_tool("echo", {"text": "hello there"})
    (off,) = named(exporter.get_finished_spans(), "execute_tool ")
    assert off.attributes is not None
    assert gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS not in off.attributes
    assert gen_ai.GEN_AI_TOOL_CALL_RESULT not in off.attributes
    assert not any(
        "hello there" in str(v)
        for s in exporter.get_finished_spans()
        for v in (s.attributes or {}).values()
    )

    exporter.clear()
    await traced.admin.set_live("trace_content", True)
    result = await traced.call_tool("echo", {"text": f"key={SECRET}!"})
    assert "[redacted]" in result.text
    (on,) = named(exporter.get_finished_spans(), "execute_tool ")
    assert on.attributes is not None
    arguments = str(on.attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert json.loads(arguments) == {"text": "key=[redacted]!"}
    assert on.attributes[gen_ai.GEN_AI_TOOL_CALL_RESULT] == "key=[redacted]!"
    every = [str(v) for s in exporter.get_finished_spans() for v in (s.attributes or {}).values()]
    assert not any(SECRET in v for v in every)


async def test_a_refusal_names_the_stage_that_refused_and_the_error_type(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    result = await traced.call_tool("echo", {"text": 42})
    assert result.is_error and result.error_code
    spans = exporter.get_finished_spans()
    (tool,) = named(spans, "execute_tool ")
    assert tool.attributes is not None
    assert tool.attributes[err.ERROR_TYPE] == result.error_code
    assert tool.status.status_code is StatusCode.ERROR
    decisions = {
        (s.attributes or {})[Attr.STAGE]: (s.attributes or {})[Attr.STAGE_DECISION]
        for s in named(spans, "stage ")
    }
    assert decisions["validation"] == "refused"
    assert decisions.get("visibility") in (None, "passed")  # only slow passes by default
    assert "handler" not in decisions
    (validation,) = [s for s in named(spans, "stage validation")]
    assert (validation.attributes or {})[Attr.STAGE_CODE] == result.error_code


async def test_without_a_provider_nothing_is_traced(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        assert platform.kernel.dispatcher.tracer is None
        assert (await platform.call_tool("echo", {"text": "hi"})).text == "hi"


async def test_by_default_only_notable_stages_get_a_span(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    for _ in range(5):
        assert (await traced.call_tool("echo", {"text": "hi"})).text == "hi"
    spans = exporter.get_finished_spans()
    assert len(named(spans, "execute_tool ")) == 5
    chained = len(traced.kernel.dispatcher.chained)
    assert len(named(spans, "stage ")) < 5 * chained
    for stage in named(spans, "stage "):  # a loaded machine may make one take a millisecond
        assert stage.end_time is not None and stage.start_time is not None
        assert stage.end_time - stage.start_time >= 1_000_000


async def test_a_delegates_run_is_a_child_of_the_parents_delegate_call(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"text": "Child.", "tool_calls": [call("echo", text="x")]},
        {"text": "The child says hi."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="Say hi", model=child)]},
        {"when_result_contains": "The child says hi.", "text": "Parent done."},
    )
    turn = await traced.chat("go", model=parent, profile="auto")
    assert (turn.status, turn.text) == ("finished", "Parent done.")
    spans = exporter.get_finished_spans()
    runs = named(spans, "invoke_agent ")
    assert len(runs) == 2
    (top,) = [s for s in runs if s.parent is None]
    (sub,) = [s for s in runs if s.parent is not None]
    assert (sub.attributes or {})[Attr.RUN_KIND] == "delegate"
    (delegate,) = [s for s in spans if s.name == "execute_tool delegate"]
    assert sub.parent is not None and sub.parent.span_id == delegate.context.span_id
    assert top in ancestors(spans, delegate)
    assert {s.context.trace_id for s in spans} == {top.context.trace_id}
    (echo,) = [s for s in spans if s.name == "execute_tool echo"]
    assert sub in ancestors(spans, echo)


async def test_parking_and_resuming_are_a_span_event_pair(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    write = call("write_note", path="data://note.md", text="hello")
    model = write_script({"tool_calls": [write]}, [{"text": "Written."}])
    turn = await traced.chat("write a note", model=model, profile="balanced")
    assert turn.status == "parked" and len(turn.approvals) == 1
    (first,) = named(exporter.get_finished_spans(), "invoke_agent ")
    (parked,) = [e for e in first.events if e.name == "corral.run.parked"]
    assert parked.attributes is not None
    assert list(parked.attributes[Attr.WAIT_IDS]) == [turn.approvals[0]]
    assert (first.attributes or {})[Attr.RUN_STATUS] == "parked"
    (stage,) = named(exporter.get_finished_spans(), "stage approval")
    assert (stage.attributes or {})[Attr.STAGE_DECISION] == "parked"

    exporter.clear()
    await traced.decide_approval(turn.approvals[0], "approve", surface="http")
    final = await traced.runtime.wait_run(turn.run_id)
    assert final.status == "finished"
    spans = exporter.get_finished_spans()
    (second,) = named(spans, "invoke_agent ")
    (resumed,) = [e for e in second.events if e.name == "corral.run.resumed"]
    assert resumed.attributes is not None
    assert resumed.attributes[Attr.DECISION] == "approved"
    assert resumed.attributes[Attr.DECIDED_BY]
    assert resumed.attributes[Attr.DECISION_SURFACE] == "http"
    (write_span,) = [s for s in spans if s.name == "execute_tool write_note"]
    assert second in ancestors(spans, write_span)
    assert resumed.timestamp <= (write_span.start_time or 0)


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    return provider, caught


async def test_a_run_resumed_by_another_platform_continues_the_trace_that_queued_it(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    """Two platform instances on one SQLite store, each with its own tracer provider (as
    two processes would have): the trace context travels in the run's row."""
    write = call("write_note", path="data://note.md", text="hello")
    model = write_script({"tool_calls": [write]}, [{"text": "Written."}])
    first_provider, first_caught = _provider()
    use_provider(first_provider)
    try:
        async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as first:
            request = first_provider.get_tracer("test").start_as_current_span("POST /chat")
            with request as incoming:
                turn = await first.chat("write a note", model=model, profile="balanced")
            assert turn.status == "parked"
        (queued,) = named(first_caught.get_finished_spans(), "invoke_agent ")
        assert queued.parent is not None and queued.parent.span_id == incoming.context.span_id

        second_provider, second_caught = _provider()
        use_provider(second_provider)
        async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as second:
            await second.decide_approval(turn.approvals[0], "approve")
            assert (await second.runtime.wait_run(turn.run_id)).status == "finished"
    finally:
        use_provider(None)
    (resumed,) = named(second_caught.get_finished_spans(), "invoke_agent ")
    assert resumed.context.trace_id == incoming.context.trace_id
    assert resumed.parent is not None and resumed.parent.span_id == incoming.context.span_id
    assert (resumed.attributes or {})[Attr.RUN_ID] == turn.run_id
    (write_span,) = named(second_caught.get_finished_spans(), "execute_tool write_note")
    assert write_span.context.trace_id == incoming.context.trace_id


async def test_a_run_nothing_traced_queued_keeps_the_trace_of_its_first_job(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    write = call("write_note", path="data://note.md", text="hello")
    model = write_script({"tool_calls": [write]}, [{"text": "Written."}])
    turn = await traced.chat("write a note", model=model, profile="balanced")
    (first,) = named(exporter.get_finished_spans(), "invoke_agent ")
    assert first.parent is None
    exporter.clear()
    await traced.decide_approval(turn.approvals[0], "approve")
    await traced.runtime.wait_run(turn.run_id)
    (second,) = named(exporter.get_finished_spans(), "invoke_agent ")
    assert second.context.trace_id == first.context.trace_id
    assert second.parent is not None and second.parent.span_id == first.context.span_id


def traceparent_of(span: ReadableSpan) -> str:
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


async def test_a_shell_call_gets_the_traceparent_of_its_span(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    result = await traced.call_tool("execute", {"command": 'echo "tp=$TRACEPARENT."'})
    assert not result.is_error, result.text
    (span,) = named(exporter.get_finished_spans(), "execute_tool execute")
    assert f"tp={traceparent_of(span)}." in result.text


async def test_untraced_a_shell_call_gets_no_traceparent(platform: Platform) -> None:
    result = await platform.call_tool("execute", {"command": 'echo "tp=${TRACEPARENT-unset}."'})
    assert not result.is_error and "tp=unset." in result.text, result.text


async def test_a_workflow_run_is_an_invoke_workflow_span_with_its_run_inside(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Digest done."})
    made = await traced.call_tool(
        "workflow", {"set": {"title": "Digest", "instruction": "Summarise.", "model": model}}
    )
    workflow_id = made.data["workflow"]["workflow_id"]
    ran = await traced.call_tool(
        "workflow", {"run": {"workflow_id": workflow_id, "wait_seconds": 60}}
    )
    assert ran.data["run"]["status"] == "finished", ran.data
    spans = exporter.get_finished_spans()
    (workflow,) = named(spans, "invoke_workflow ")
    assert workflow.name == "invoke_workflow Digest" and workflow.attributes is not None
    assert workflow.attributes[gen_ai.GEN_AI_OPERATION_NAME] == (
        gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value
    )
    assert workflow.attributes[gen_ai.GEN_AI_WORKFLOW_NAME] == "Digest"
    assert workflow.attributes[Attr.WORKFLOW_ID] == workflow_id
    assert workflow.attributes[Attr.WORKFLOW_TRIGGER] == "manual"
    assert workflow.attributes[Attr.RUN_ID] == ran.data["run"]["run_id"]
    (agent,) = children(spans, workflow)
    assert agent.name.startswith("invoke_agent ") and agent.attributes is not None
    assert agent.attributes[Attr.RUN_KIND] == "workflow"
    assert agent.attributes[Attr.RUN_ID] == ran.data["run"]["run_id"]
    # Started by a tool call: the call's span holds the workflow's.
    (caller,) = [s for s in spans if s in ancestors(spans, workflow)][:1]
    assert caller.name == "execute_tool workflow"


async def test_a_shell_calls_analysis_gate_and_spawn_are_spans_of_its_call(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    result = await traced.call_tool("execute", {"command": "echo hi"})
    assert not result.is_error, result.text
    spans = exporter.get_finished_spans()
    (call_span,) = named(spans, "execute_tool execute")
    steps = sorted(named(spans, "shell "), key=lambda s: s.start_time or 0)
    assert [s.name for s in steps] == ["shell analysis", "shell gate", "shell spawn"]
    for step in steps:
        assert step.parent is not None and step.parent.span_id == call_span.context.span_id
        assert step.attributes is not None
        assert step.attributes[Attr.SHELL_STEP] == step.name.removeprefix("shell ")
    analysis, gate, spawn = steps
    assert (analysis.attributes or {})[Attr.SHELL_OUTCOME] == "allowed"
    assert (gate.attributes or {})[Attr.SHELL_OUTCOME] == "allowed"
    assert (spawn.attributes or {})[Attr.SHELL_PLANE] == "app"
    assert (spawn.attributes or {})[Attr.SHELL_CONFINEMENT]

    exporter.clear()
    refused = await traced.call_tool("execute", {"command": "cat /etc/shadow > data://x"})
    assert refused.is_error
    spans = exporter.get_finished_spans()
    refusing = [s for s in named(spans, "shell ") if s.status.status_code is StatusCode.ERROR]
    assert len(refusing) == 1, [(s.name, s.attributes) for s in named(spans, "shell ")]
    assert (refusing[0].attributes or {})[Attr.SHELL_OUTCOME] == "refused"
    assert (refusing[0].attributes or {})[Attr.SHELL_RULE]
    assert not named(spans, "shell spawn")


async def test_chat_spans_carry_prompt_and_response_only_when_content_is_on(
    traced: Platform, exporter: InMemorySpanExporter, write_script: ScriptWriter
) -> None:
    assert Attr.INPUT_MESSAGES == gen_ai.GEN_AI_INPUT_MESSAGES
    assert Attr.OUTPUT_MESSAGES == gen_ai.GEN_AI_OUTPUT_MESSAGES
    assert Attr.SYSTEM_INSTRUCTIONS == gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
    assert Attr.WORKFLOW_NAME == gen_ai.GEN_AI_WORKFLOW_NAME
    model = write_script(
        {"text": "Echoing.", "tool_calls": [call("echo", text=f"key={SECRET}")]},
        {"when_result_contains": "redacted", "text": "Done."},
    )
    off = await traced.chat("say the quiet words", model=model)
    assert off.status == "finished"
    for chat in named(exporter.get_finished_spans(), "chat "):
        keys = set(chat.attributes or {})
        assert not keys & {Attr.INPUT_MESSAGES, Attr.OUTPUT_MESSAGES, Attr.SYSTEM_INSTRUCTIONS}

    exporter.clear()
    await traced.admin.set_live("trace_content", True)
    on = await traced.chat("say the quiet words", model=model)
    assert on.status == "finished"
    first, second = sorted(
        named(exporter.get_finished_spans(), "chat "), key=lambda s: s.start_time or 0
    )
    attributes = first.attributes or {}
    system = json.loads(str(attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS]))
    assert system and all(part["type"] == "text" for part in system)
    given = json.loads(str(attributes[gen_ai.GEN_AI_INPUT_MESSAGES]))
    assert given[-1] == {
        "role": "user",
        "parts": [{"type": "text", "content": "say the quiet words"}],
    }
    (answer,) = json.loads(str(attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES]))
    assert answer["role"] == "assistant" and answer["finish_reason"]
    text, tool_call = answer["parts"]
    assert text == {"type": "text", "content": "Echoing."}
    assert tool_call["type"] == "tool_call" and tool_call["name"] == "echo"
    assert json.loads(tool_call["arguments"]) == {"text": "key=[redacted]"}
    # The second request sees the tool's answer, redacted.
    later = json.loads(str((second.attributes or {})[gen_ai.GEN_AI_INPUT_MESSAGES]))
    (response,) = [m for m in later if m["role"] == "tool"]
    assert response["parts"][0]["type"] == "tool_call_response"
    assert response["parts"][0]["id"] == tool_call["id"]
    every = [str(v) for s in exporter.get_finished_spans() for v in (s.attributes or {}).values()]
    assert not any(SECRET in v for v in every)


async def test_a_slow_handler_does_not_make_the_stages_around_it_notable(
    traced: Platform, exporter: InMemorySpanExporter
) -> None:
    result = await traced.call_tool("execute", {"command": "sleep 0.2"})
    assert not result.is_error, result.text
    spans = exporter.get_finished_spans()
    stages = {(s.attributes or {})[Attr.STAGE]: s for s in named(spans, "stage ")}
    assert (stages["handler"].attributes or {})[Attr.STAGE_DECISION] == "ran"
    chained = [stage.name for stage in traced.kernel.dispatcher.chained]
    wrapping = chained[: chained.index("handler")]
    # Each of these spans 200 ms; only its own time (a millisecond on a loaded machine,
    # the policy step's analysis) could make it notable.
    shown = [name for name in wrapping if name in stages]
    assert len(shown) <= len(wrapping) // 2, shown
