"""A command hook continues the trace: ``TRACEPARENT`` of the span it runs in (a tool call's)
is in its environment, and absent when nothing is traced."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider

from corral.runtime.hooks import tool_hook_input
from tests.runtime.hooks.conftest import MakeHooks, pre_tool_use, script


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
