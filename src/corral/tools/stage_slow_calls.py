"""Stage ``slow_calls``: a call that took at least ``perf_slow_tool_ms`` writes one
``perf.slow`` record (tool, duration, failed or not; never arguments or output); none for a
call cut short by Stop or still waiting. It is the outermost stage: it times everything."""

from __future__ import annotations

import logging
import time
from typing import Protocol

from corral.tools.call import ToolCall
from corral.tools.results import ToolResult
from corral.tools.stages import Next

__all__ = ["SlowCallRecords", "SlowCallSink"]

perf_log = logging.getLogger("corral.perf")


class SlowCallSink(Protocol):
    async def record_slow(
        self, *, tool: str, duration_ms: float, failed: bool, run_id: str | None
    ) -> None: ...


class SlowCallRecords:
    name = "slow_calls"

    def __init__(self, sink: SlowCallSink) -> None:
        self._sink = sink

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        result = await next(call)
        if call.cancellation.cancelled or result.status in ("stopped", "pending"):
            return result
        duration_ms = (time.perf_counter() - call.started) * 1000
        if duration_ms >= float(call.state.live["perf_slow_tool_ms"]):
            await self._record(call, result, duration_ms)
        return result

    async def _record(self, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        tool = call.request.tool
        perf_log.warning(
            "perf.slow tool=%s duration_ms=%.0f failed=%s", tool, duration_ms, result.is_error
        )
        await self._sink.record_slow(
            tool=tool,
            duration_ms=round(duration_ms, 1),
            failed=result.is_error,
            run_id=call.request.run_id,
        )
