"""perf.slow: one record for a slow call, none for a call cut short by Stop."""

from __future__ import annotations

import asyncio

from corral import Cancellation
from corral.platform import Platform


async def test_slow_call_writes_one_record_without_arguments(platform: Platform) -> None:
    await platform.admin.set_live("perf_slow_tool_ms", 50)
    await platform.call_tool("wait", {"ms": 80})
    await platform.call_tool("wait", {"ms": 80, "fail": True})
    await platform.call_tool("echo", {"text": "quick"})
    records = await platform.logs.records(kind="perf.slow")
    assert len(records) == 2
    failed, ok = records  # newest first
    assert ok.data["tool"] == "wait" and ok.data["failed"] is False
    assert failed.data["failed"] is True
    assert ok.data["duration_ms"] >= 80
    assert set(ok.data) == {"tool", "duration_ms", "failed"}


async def test_fast_call_writes_nothing(platform: Platform) -> None:
    await platform.call_tool("wait", {"ms": 1})
    assert await platform.logs.records(kind="perf.slow") == []


async def test_stopped_call_is_not_reported(platform: Platform) -> None:
    await platform.admin.set_live("perf_slow_tool_ms", 1)
    stop = Cancellation()
    started = asyncio.Event()
    call = asyncio.ensure_future(
        platform.call_tool(
            "wait", {"ms": 60_000}, cancellation=stop, output=lambda _s, _t: started.set()
        )
    )
    await started.wait()
    stop.cancel()
    result = await call
    assert result.status == "stopped"
    assert await platform.logs.records(kind="perf.slow") == []


async def test_slow_record_carries_the_run(platform: Platform) -> None:
    await platform.admin.set_live("perf_slow_tool_ms", 10)
    await platform.call_tool("wait", {"ms": 20}, run_id="run_1")
    records = await platform.logs.records(run_id="run_1")
    assert [r.kind for r in records] == ["perf.slow"]
