"""A run queued here and advanced by a real `corral worker` continues the trace of the
request that queued it, its first job and its job after an approval alike: the worker
(configured by ``OTEL_*``) exports its spans to a loopback OTLP collector."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import TracerProvider

import corral
from corral.tracing import use_provider
from tests.otlp_collector import running_collector
from tests.runtime.cluster.conftest import Cluster, call


async def test_a_workers_jobs_continue_the_trace_that_queued_the_run(
    own_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = own_cluster.script(
        {"text": "Needs a yes.", "tool_calls": [call("launch", what="the probe")]},
        {"text": "Launched.", "when_result_contains": "launched the probe"},
    )
    provider = TracerProvider()
    with running_collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        own_cluster.start_worker(1)
        use_provider(provider)
        try:
            async with corral.open(own_cluster.data_dir) as platform:
                rt = platform.runtime
                with provider.get_tracer("test").start_as_current_span("POST /chat") as request:
                    parked = await rt.chat("launch it", model=model)
                assert parked.status == "parked", own_cluster.logs()
                await platform.decide_approval(parked.waiting[0].id, "approve")
                settled = await asyncio.wait_for(rt.wait_run(parked.run_id), 60)
        finally:
            use_provider(None)
            provider.shutdown()
        assert settled.status == "finished", own_cluster.logs()
        launch = await asyncio.to_thread(collector.wait_for, "execute_tool launch")
        jobs = await asyncio.to_thread(collector.wait_for_all, "invoke_agent default", 2)
    context = request.get_span_context()
    trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
    assert len(jobs) == 2, own_cluster.logs()
    assert {(s.trace_id, s.parent_span_id) for s in jobs} == {(trace_id, span_id)}
    assert launch.trace_id == trace_id
