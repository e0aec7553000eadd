"""The HTTP API continues a caller's trace: a run queued by a request carrying
``traceparent`` is part of the caller's trace, its job after an approval decided over HTTP
too (with the surface on the resumed event); without tracing the header changes nothing."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import corral
from corral.platform import Platform
from corral.server import create_app
from corral.tracing import Attr, use_provider
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, call


@asynccontextmanager
async def client(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    token = await platform.identity.create_token("owner")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(platform)),
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as http:
        yield http


def parking_script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    turns = [{"tool_calls": [call("write_note", path="data://t.md", text="x")]}, {"text": "ok"}]
    path.write_text(json.dumps({"turns": turns}))
    return f"script:{path}"


async def test_a_run_queued_over_http_continues_the_callers_trace(
    data_dir: Path, tmp_path: Path
) -> None:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    use_provider(provider)
    try:
        async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
            async with client(platform) as http:
                turn = (
                    await http.post(
                        "/chat",
                        json={"message": "write", "model": parking_script(tmp_path)},
                        headers={"traceparent": f"00-{trace_id}-{parent_id}-01"},
                    )
                ).json()
                assert turn["status"] == "parked", turn
                approval = turn["waiting"][0]["id"]
                decided = await http.post(
                    f"/approvals/{approval}/decision", json={"decision": "approve"}
                )
                assert decided.status_code == 200, decided.text
            assert (await platform.runtime.wait_run(turn["run_id"])).status == "finished"
    finally:
        use_provider(None)
    jobs = [s for s in caught.get_finished_spans() if s.name.startswith("invoke_agent ")]
    assert len(jobs) == 2
    for job in jobs:
        assert job.parent is not None
        assert (f"{job.context.trace_id:032x}", f"{job.parent.span_id:016x}") == (
            trace_id,
            parent_id,
        )
    (resumed,) = [e for job in jobs for e in job.events if e.name == "corral.run.resumed"]
    assert (resumed.attributes or {})[Attr.DECISION_SURFACE] == "http"


async def test_without_tracing_the_header_is_not_kept(data_dir: Path, tmp_path: Path) -> None:
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        async with client(platform) as http:
            turn = (
                await http.post(
                    "/chat",
                    json={"message": "write", "model": parking_script(tmp_path)},
                    headers={"traceparent": f"00-{secrets.token_hex(16)}-{'1' * 16}-01"},
                )
            ).json()
        run = await platform.runtime.runs.get(turn["run_id"])
    assert run.trace_parent is None
