"""Per-call overhead of an MCP tool through Corral's pipeline against the SDK's own client.

    .venv/bin/python bench/mcp_calls.py [--calls N]

Both sides call ``add`` on the same stdio server (tests/fixtures/mcp_demo_server.py, one
process each) in the same run: the SDK's ClientSession directly, then ``demo_add`` through
``platform.call_tool`` (visibility, validation, gates, policy, approval check, the handler,
shaping). The difference is what connecting a server through ``connect`` costs per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

SERVER = HERE.parent / "tests" / "fixtures" / "mcp_demo_server.py"
COMMAND = [sys.executable, str(SERVER)]


async def direct(calls: int) -> float:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=COMMAND[0], args=COMMAND[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(50):
            await session.call_tool("add", {"a": 1, "b": 2})
        started = time.perf_counter()
        for _ in range(calls):
            await session.call_tool("add", {"a": 1, "b": 2})
        return (time.perf_counter() - started) / calls


async def piped(calls: int) -> float:
    import corral

    with tempfile.TemporaryDirectory() as tmp:
        async with corral.open(Path(tmp) / "data") as platform:
            added = await platform.call_tool(
                "connect", {"add": [{"kind": "mcp", "name": "demo", "command": COMMAND}]}
            )
            assert not added.is_error, added.text
            for _ in range(50):
                await platform.call_tool("demo_add", {"a": 1, "b": 2})
            started = time.perf_counter()
            for _ in range(calls):
                result = await platform.call_tool("demo_add", {"a": 1, "b": 2})
            assert result.text == "sum=3", result.text
            return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    sdk, ours = [], []
    for _ in range(options.runs):
        sdk.append(asyncio.run(direct(options.calls)))
        ours.append(asyncio.run(piped(options.calls)))
    print(f"calls per side and run:     {options.calls} x {options.runs} runs")
    for name, values in (("SDK client directly", sdk), ("through Corral", ours)):
        print(
            f"{name:27} min {min(values) * 1e6:8.1f} µs  "
            f"median {statistics.median(values) * 1e6:8.1f} µs/call"
        )
    overhead = statistics.median(ours) - statistics.median(sdk)
    ratio = statistics.median(ours) / statistics.median(sdk)
    print(f"overhead (median):          {overhead * 1e6:8.1f} µs/call  ratio {ratio:5.2f}x")


if __name__ == "__main__":
    main()
