"""Per-call overhead of the dispatch pipeline against calling the handler directly.

    .venv/bin/python bench/dispatch.py [--calls N]

Both sides run in the same process on the same trivial async tool; the difference is what
visibility, validation, gates, policy, approval check, shaping and the slow-call check cost.
Target: under 100 µs of overhead per call.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import corral
from corral.tools.dispatch import CallRequest
from noop_package import write_package


async def measure(calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        package = write_package(Path(tmp))
        async with corral.open(Path(tmp) / "data", package_paths=[package]) as platform:
            tool = platform.registry.tools["noop"]
            handler = tool.handler
            ctx: Any = None
            args = {"text": "hi"}
            for _ in range(200):  # warm caches and validators
                await platform.call_tool("noop", args)
                await handler(args, ctx)
            started = time.perf_counter()
            for _ in range(calls):
                await handler(args, ctx)
            direct = (time.perf_counter() - started) / calls
            started = time.perf_counter()
            for _ in range(calls):
                result = await platform.call_tool("noop", args)
            piped = (time.perf_counter() - started) / calls
            assert result.text == "hi"
            owner = await platform.caller()
            request = CallRequest(tool="noop", arguments=args, caller=owner)
            started = time.perf_counter()
            for _ in range(calls):
                await platform.dispatcher.dispatch(request)
            dispatch_only = (time.perf_counter() - started) / calls
    return {"direct": direct, "call_tool": piped, "dispatch": dispatch_only}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    options = parser.parse_args()
    figures = asyncio.run(measure(options.calls))
    direct = figures["direct"]
    print(f"calls per side:            {options.calls}")
    print(f"handler called directly:   {direct * 1e6:8.2f} µs/call")
    for name in ("dispatch", "call_tool"):
        total = figures[name]
        print(
            f"{'platform.' + name + '()':26} {total * 1e6:8.2f} µs/call  "
            f"overhead {(total - direct) * 1e6:7.2f} µs  ratio {total / direct:6.1f}x"
        )
    overhead = (figures["call_tool"] - direct) * 1e6
    print(f"target: overhead < 100 µs per call -> {'met' if overhead < 100 else 'NOT met'}")


if __name__ == "__main__":
    main()
