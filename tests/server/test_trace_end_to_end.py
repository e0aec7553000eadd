"""One trace, end to end, with the SDK's in-memory exporter: a run queued over HTTP calls a
tool of a real MCP SDK server (which sees the call's ``traceparent``), delegates to a child
run, and parks on an approval decided over HTTP; its resumed job, the delegate's run and the
MCP call are all in the trace of its first job, and the local trace store holds the same
spans. (A run advanced by a real ``corral worker`` on PostgreSQL continuing the trace of the
request that queued it is tests/runtime/cluster/test_worker_trace.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import corral
from corral.tracing import Attr, use_provider
from corral.tracing.stored import trace_id_of
from tests.conftest import DEMO
from tests.packages.core.conftest import MCP_FEATURES_SERVER
from tests.packages.core.test_mcp_features import connected
from tests.runtime.conftest import RTKIT, call
from tests.server.test_trace_context import client


def scripted(tmp_path: Path, name: str, *turns: Any) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_parent_delegate_http_approval_and_mcp_call_are_one_trace(
    data_dir: Path, tmp_path: Path
) -> None:
    child = scripted(
        tmp_path,
        "child",
        {"tool_calls": [call("echo", text="from the child")]},
        {"text": "The child says hi."},
    )
    parent = scripted(
        tmp_path,
        "parent",
        {"tool_calls": [call("feat_traceparent")]},
        {"tool_calls": [call("delegate", task="Say hi", model=child)]},
        {"tool_calls": [call("write_note", path="data://e2e.md", text="x")]},
        {"text": "Parent done."},
    )
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    use_provider(provider)
    try:
        async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
            await connected(platform, list(MCP_FEATURES_SERVER))
            async with client(platform) as http:
                turn = (
                    await http.post(
                        "/chat", json={"message": "go", "model": parent, "profile": "balanced"}
                    )
                ).json()
                run_id = turn["run_id"]
                decided = 0
                while turn["status"] == "parked":
                    for waiting in turn["waiting"]:
                        answer = await http.post(
                            f"/approvals/{waiting['id']}/decision", json={"decision": "approve"}
                        )
                        assert answer.status_code == 200, answer.text
                        decided += 1
                    await platform.runtime.wait_run(run_id)
                    turn = (await http.get(f"/runs/{run_id}")).json()
                assert turn["status"] == "finished", turn
                assert decided >= 1
            run = await platform.runtime.run(run_id)
            await platform.kernel.traces.flush()
            trace_id = trace_id_of(run.trace_parent)
            assert trace_id is not None
            stored = await platform.kernel.traces.spans(trace_id)
    finally:
        use_provider(None)
        provider.shutdown()

    spans = caught.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    assert {f"{s.context.trace_id:032x}" for s in spans if _in_run(s, by_id)} == {trace_id}

    jobs = [s for s in spans if s.name.startswith("invoke_agent ")]
    parent_jobs = [j for j in jobs if (j.attributes or {})[Attr.RUN_ID] == run_id]
    assert len(parent_jobs) == decided + 1
    (first,) = [j for j in parent_jobs if j.parent is None]
    for later in parent_jobs:
        assert f"{later.context.trace_id:032x}" == trace_id
        if later is not first:
            assert parent_of(later) == first.context.span_id
    resumed = [e for j in parent_jobs for e in j.events if e.name == "corral.run.resumed"]
    assert resumed and {(e.attributes or {})[Attr.DECISION_SURFACE] for e in resumed} == {"http"}

    # Under ``balanced`` a call may park first: one span then, another when it runs.
    delegate_calls = {s.context.span_id for s in spans if s.name == "execute_tool delegate"}
    (sub,) = [j for j in jobs if (j.attributes or {})[Attr.RUN_KIND] == "delegate"]
    assert parent_of(sub) in delegate_calls
    assert f"{sub.context.trace_id:032x}" == trace_id
    (echo,) = [s for s in spans if s.name == "execute_tool echo"]
    assert parent_of(echo) == sub.context.span_id

    mcp_calls = [s for s in spans if s.name == "execute_tool feat_traceparent"]
    assert {f"{s.context.trace_id:032x}" for s in mcp_calls} == {trace_id}
    seen = await_result_text(turn, "feat_traceparent")
    assert seen in {
        f"00-{trace_id}-{s.context.span_id:016x}-{s.context.trace_flags:02x}" for s in mcp_calls
    }

    writes = [s for s in spans if s.name == "execute_tool write_note"]
    assert writes and {f"{s.context.trace_id:032x}" for s in writes} == {trace_id}

    # The local trace store kept the same trace.
    exported = {
        f"{s.context.span_id:016x}" for s in spans if f"{s.context.trace_id:032x}" == trace_id
    }
    assert {s.span_id for s in stored} == exported


def _in_run(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> bool:
    """Whether ``span`` belongs to the chat's runs (not the test's MCP connect call)."""
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
    return span.name.startswith("invoke_agent ")


def await_result_text(turn: dict[str, Any], tool: str) -> str:
    for row in turn.get("rows", []):
        if row.get("kind") == "tool_result" and row.get("data", {}).get("tool") == tool:
            content = row["data"]["result"]["content"]
            return "".join(part.get("text", "") for part in content)
    raise AssertionError(f"no {tool} result in {turn}")
