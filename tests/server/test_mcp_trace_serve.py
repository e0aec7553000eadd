"""`corral mcp serve` continues a client's trace: the ``traceparent`` in a call's ``_meta``
parents the SDK's server span, and that the call's ``execute_tool`` span, all exported by
the process (configured by ``OTEL_*``) to a loopback OTLP collector."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from pathlib import Path
from typing import Any, cast

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import corral
from tests.conftest import DEMO
from tests.otlp_collector import running_collector


async def test_a_call_continues_the_clients_traceparent(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]):
        pass  # migrate and seed before the server process starts
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    with running_collector() as collector:
        env = {
            "CORRAL_DATA_DIR": str(data_dir),
            "CORRAL_PACKAGE_PATH": str(DEMO),
            "PYTHONPATH": os.pathsep.join(sys.path),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "corral", "mcp", "serve"], env=env
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            meta = cast(Any, {"traceparent": f"00-{trace_id}-{parent_id}-01"})
            echoed = await session.call_tool("echo", {"text": "hi"}, meta=meta)
            assert not echoed.is_error
            span = await asyncio.to_thread(collector.wait_for, "execute_tool echo")
            server = await asyncio.to_thread(collector.wait_for, "tools/call echo")
    assert (server.trace_id, server.parent_span_id) == (trace_id, parent_id)
    assert (span.trace_id, span.parent_span_id) == (trace_id, server.span_id)
