"""A command hook continues the trace: ``TRACEPARENT`` of the span it runs in (a tool call's,
or while the platform traces its own ``hook`` span) is in its environment, and absent when
nothing is traced; each hook that runs is a span with its outcome."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from corral.runtime.hooks import tool_hook_input
from corral.tracing import Attr, use_provider
from tests.runtime.hooks.conftest import SCRIPTS, MakeHooks, pre_tool_use, script


async def seen_env(make_hooks: MakeHooks) -> dict[str, str]:
    hooks = make_hooks(pre_tool_use("Bash", script("echo_env.py")))
    given = tool_hook_input(
        arguments={"command": "ls"}, call_id="call_1", conversation_id="c_1", profile="safe"
    )
    outcome = await hooks.run("PreToolUse", given, tool="execute")
    env: dict[str, str] = json.loads(outcome.system_messages[0])["env"]
    return env


async def test_a_command_hook_gets_the_traceparent_of_the_current_span(
    make_hooks: MakeHooks,
) -> None:
    provider = TracerProvider()
    with provider.get_tracer("test").start_as_current_span("execute_tool execute") as span:
        env = await seen_env(make_hooks)
    context = span.get_span_context()
    flags = f"{context.trace_flags:02x}"
    assert env["TRACEPARENT"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"
    provider.shutdown()


async def test_untraced_a_command_hook_gets_no_traceparent(make_hooks: MakeHooks) -> None:
    assert "TRACEPARENT" not in await seen_env(make_hooks)


async def test_each_hook_that_runs_is_a_span_with_its_outcome(make_hooks: MakeHooks) -> None:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(provider)
    try:
        with provider.get_tracer("test").start_as_current_span("execute_tool execute") as call:
            env = await seen_env(make_hooks)
            hooks = make_hooks(pre_tool_use("Bash", script("block_rm_rf.sh")))
            given = tool_hook_input(
                arguments={"command": "rm -rf /tmp/x"},
                call_id="c2",
                conversation_id="c_1",
                profile="safe",
            )
            blocked = await hooks.run("PreToolUse", given, tool="execute")
    finally:
        use_provider(None)
        provider.shutdown()
    assert blocked.decision == "deny"
    spans = {s.name: s for s in caught.get_finished_spans() if s.name.startswith("hook ")}
    assert sorted(spans) == ["hook PreToolUse block_rm_rf.sh", "hook PreToolUse echo_env.py"]
    for span in spans.values():
        assert span.parent is not None and span.parent.span_id == call.get_span_context().span_id
        assert (span.attributes or {})[Attr.HOOK_EVENT] == "PreToolUse"
        assert (span.attributes or {})[Attr.HOOK_KIND] == "command"
    echo = spans["hook PreToolUse echo_env.py"]
    assert (echo.attributes or {})[Attr.HOOK_OUTCOME] == "no_opinion"
    # The hook's command continues the trace from its own span.
    context = echo.get_span_context()
    assert context is not None and f"{context.span_id:016x}" in env["TRACEPARENT"]
    block = spans["hook PreToolUse block_rm_rf.sh"]
    assert (block.attributes or {})[Attr.HOOK_OUTCOME] == "deny"


async def test_a_failing_hook_is_a_failed_span(make_hooks: MakeHooks) -> None:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(provider)
    try:
        with provider.get_tracer("test").start_as_current_span("execute_tool execute"):
            hooks = make_hooks(pre_tool_use("Bash", str(SCRIPTS / "no-such-hook")))
            given = tool_hook_input(
                arguments={"command": "ls"}, call_id="c3", conversation_id="c", profile="safe"
            )
            await hooks.run("PreToolUse", given, tool="execute")
    finally:
        use_provider(None)
        provider.shutdown()
    (failed,) = [s for s in caught.get_finished_spans() if s.name.startswith("hook ")]
    assert (failed.attributes or {})[Attr.HOOK_OUTCOME] == "error"
    assert (failed.attributes or {})[Attr.ERROR_TYPE] == "hook_failed"
    assert failed.status.status_code is StatusCode.ERROR
