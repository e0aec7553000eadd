"""A run queued here and advanced by a real `corral worker` continues the trace of the
request that queued it, its first job, its job after an approval and the job that takes it
over from a killed worker alike. The workers (configured by ``OTEL_*``) export their spans
to a loopback OTLP collector."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import TracerProvider

import corral
from corral.platform import Platform
from corral.tracing import use_provider
from corral.tracing.stored import StoredSpan, trace_id_of
from tests.otlp_collector import running_collector
from tests.runtime.cluster.conftest import Cluster, call, read_started


async def stored_jobs(platform: Platform, traceparent: str | None) -> list[StoredSpan]:
    """The run's two ``invoke_agent`` spans once the worker's store wrote them (it writes
    every second)."""
    trace_id = trace_id_of(traceparent)
    assert trace_id is not None
    while True:
        spans = await platform.kernel.traces.spans(trace_id)
        jobs = [s for s in spans if s.name == "invoke_agent default"]
        if len(jobs) == 2:
            return jobs
        await asyncio.sleep(0.1)


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
                settled = await own_cluster.settled(rt, parked.run_id, 60)
                # The worker keeps its spans in the local trace store on PostgreSQL too.
                run = await rt.run(parked.run_id)
                stored = await asyncio.wait_for(stored_jobs(platform, run.trace_parent), 30)
        finally:
            use_provider(None)
            provider.shutdown()
        assert settled.status == "finished", own_cluster.logs()
        assert len(stored) == 2
        launch = await asyncio.to_thread(collector.wait_for, "execute_tool launch")
        jobs = await asyncio.to_thread(collector.wait_for_all, "invoke_agent default", 2)
    context = request.get_span_context()
    trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
    assert len(jobs) == 2, own_cluster.logs()
    assert {(s.trace_id, s.parent_span_id) for s in jobs} == {(trace_id, span_id)}
    assert launch.trace_id == trace_id


async def test_a_run_taken_over_from_a_killed_worker_continues_its_trace(
    own_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe = own_cluster.fifo("hold")
    model = own_cluster.script(
        {"tool_calls": [call("hold", fifo=str(pipe))]},
        {"text": "Carried on elsewhere.", "when_result_contains": "interrupted"},
    )
    provider = TracerProvider()
    with running_collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        use_provider(provider)
        try:
            async with corral.open(own_cluster.data_dir) as platform:
                rt = platform.runtime
                own_cluster.start_worker(1)
                with provider.get_tracer("test").start_as_current_span("POST /chat") as request:
                    run = await rt.start_chat("hold, then carry on", model=model)
                await read_started(pipe)
                first = own_cluster.worker_of((await rt.runs.get(run.id)).worker)
                own_cluster.start_worker(1)
                first.kill()
                first.wait()
                settled = await own_cluster.settled(rt, run.id, 120)
        finally:
            use_provider(None)
            provider.shutdown()
        assert settled.status == "finished", own_cluster.logs()
        (job,) = await asyncio.to_thread(collector.wait_for_all, "invoke_agent default", 1)
    context = request.get_span_context()
    assert (job.trace_id, job.parent_span_id) == (
        f"{context.trace_id:032x}",
        f"{context.span_id:016x}",
    )
