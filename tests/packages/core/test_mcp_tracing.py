"""An MCP tool call carries the caller's trace context: a real SDK server (the features
fixture's ``traceparent`` tool) sees the ``traceparent`` of the call's ``execute_tool`` span
(the MCP SDK injects the current context; Corral's part is that the call runs in it)."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import corral
from corral.platform import Platform
from corral.tracing import use_provider
from tests.conftest import DEMO
from tests.packages.core.test_mcp_features import connected


async def test_the_server_sees_the_traceparent_of_the_calls_span(
    data_dir: Path, features_command: list[str]
) -> None:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(provider)
    try:
        async with corral.open(data_dir, package_paths=[DEMO]) as traced:
            await connected(traced, features_command)
            result = await traced.call_tool("feat_traceparent", {})
    finally:
        use_provider(None)
    assert not result.is_error, result.text
    (span,) = [s for s in caught.get_finished_spans() if s.name == "execute_tool feat_traceparent"]
    context = span.context
    flags = f"{context.trace_flags:02x}"
    assert result.text == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"


async def test_without_tracing_no_traceparent_is_sent(
    platform: Platform, features_command: list[str]
) -> None:
    await connected(platform, features_command)
    result = await platform.call_tool("feat_traceparent", {})
    assert not result.is_error and result.text == "", result.text
