"""The local trace store: a traced platform keeps its spans in ``trace_spans``, redacted,
bounded by ``trace_keep_days``, readable by a run's trace id after a restart."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from sqlalchemy import select

import corral
from corral.platform import Platform
from corral.store.trace_tables import TraceSpan
from corral.tracing import use_provider
from corral.tracing.stored import trace_id_of
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call

SECRET = "s3cr3t-value-123456"


async def every_row(platform: Platform) -> list[TraceSpan]:
    async with platform.kernel.sessions() as session:
        return list(await session.scalars(select(TraceSpan)))


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    caught = InMemorySpanExporter()
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(made)
    try:
        yield made, caught
    finally:
        use_provider(None)
        made.shutdown()


@pytest.fixture
async def traced(
    data_dir: Path,
    provider: tuple[TracerProvider, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Platform]:
    monkeypatch.setenv("DEMO_API_TOKEN", SECRET)
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as opened:
        yield opened


async def test_a_runs_spans_are_stored_with_their_tree_and_read_back_after_a_restart(
    data_dir: Path,
    provider: tuple[TracerProvider, InMemorySpanExporter],
    write_script: ScriptWriter,
) -> None:
    _, exporter = provider
    model = write_script(
        {"text": "Echo first.", "tool_calls": [call("echo", text="ping")]},
        {"when_result_contains": "ping", "text": "Done."},
    )
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as first:
        assert first.kernel.traces.on
        turn = await first.chat("go", model=model)
        assert turn.status == "finished"
    # Closing wrote what was queued; a platform opened later (even untraced) reads it.
    use_provider(None)
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as second:
        assert not second.kernel.traces.on
        run = await second.runtime.run(turn.run_id)
        trace_id = trace_id_of(run.trace_parent)
        assert trace_id is not None
        stored = await second.kernel.traces.spans(trace_id)
    exported = exporter.get_finished_spans()
    assert {(s.span_id, s.parent_id, s.name) for s in stored} == {
        (
            format(s.context.span_id, "016x"),
            format(s.parent.span_id, "016x") if s.parent is not None else None,
            s.name,
        )
        for s in exported
    }
    (agent,) = [s for s in stored if s.name == "invoke_agent default"]
    assert agent.parent_id is None and agent.kind == "internal"
    assert agent.attributes["corral.run.id"] == turn.run_id
    assert agent.end_ns >= agent.start_ns > 0
    (tool,) = [s for s in stored if s.name == "execute_tool echo"]
    assert tool.parent_id == agent.span_id
    assert tool.attributes[gen_ai.GEN_AI_TOOL_NAME] == "echo"
    assert [s.kind for s in stored if s.name.startswith("chat ")] == ["client", "client"]


async def test_content_is_stored_only_when_on_and_secrets_never(
    traced: Platform, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    made, _ = provider
    await traced.call_tool("echo", {"text": "hello there"})
    await traced.admin.set_live("trace_content", True)
    await traced.call_tool("echo", {"text": f"key={SECRET}!"})
    # A span of anything else on the provider goes through the redactor as rows do.
    with made.get_tracer("other").start_as_current_span("other") as span:
        span.set_attribute("leak", f"token {SECRET}")
        span.add_event("note", {"also": [SECRET, "fine"]})
        trace_id = format(span.get_span_context().trace_id, "032x")
    await traced.kernel.traces.flush()

    other = (await traced.kernel.traces.spans(trace_id))[0]
    assert other.attributes == {"leak": "token [redacted]"}
    assert other.events[0]["name"] == "note"
    assert other.events[0]["attributes"] == {"also": ["[redacted]", "fine"]}

    calls = []
    for row in await every_row(traced):
        assert SECRET not in str(row.attributes) + str(row.events)
        if row.name == "execute_tool echo":
            calls.append(row.attributes)
    off, on = sorted(calls, key=lambda a: gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS in a)
    assert gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS not in off
    assert "hello there" not in str(off)
    assert on[gen_ai.GEN_AI_TOOL_CALL_RESULT] == "key=[redacted]!"


async def test_spans_older_than_the_live_setting_are_deleted(traced: Platform) -> None:
    await traced.call_tool("echo", {"text": "x"})
    await traced.kernel.traces.flush()
    stored = len(await every_row(traced))
    assert stored >= 1
    now = time.time_ns()
    assert await traced.kernel.traces.prune(now) == 0
    await traced.admin.set_live("trace_keep_days", 2.0)
    assert await traced.kernel.traces.prune(now + 86_400 * 10**9) == 0
    assert await traced.kernel.traces.prune(now + 3 * 86_400 * 10**9) == stored
    assert await every_row(traced) == []


async def test_an_untraced_platform_keeps_nothing(platform: Platform) -> None:
    assert not platform.kernel.traces.on
    await platform.call_tool("echo", {"text": "x"})
    assert await platform.kernel.traces.flush() == 0
    assert await every_row(platform) == []


def test_a_traceparent_gives_its_trace_id() -> None:
    assert trace_id_of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") == (
        "0af7651916cd43dd8448eb211c80319c"
    )
    assert trace_id_of(None) is None
    assert trace_id_of("garbage") is None
