"""The tool list's prompt tokens with and without tool_search's deferral, six servers connected.

    .venv/bin/python bench/tool_search.py [--model anthropic:claude-sonnet-4-5] [--runs 3]

Opens a platform with only the installed packages, connects the six official reference MCP
servers that scripts/mcp-test-servers puts in .mcp-servers (filesystem, git, memory, time,
fetch, sequential-thinking) and counts, with Corral's tokenizer (``count_tokens``), what
the model gets as its tool list: each definition as compact JSON of name, description and
input schema, plus the ``<deferred_tools>`` block of the system prompt when tools are
deferred. It prints the figures for ``off`` and ``on``, what ``auto`` decides for
``--model``'s context at the default share, and the time one step's planning takes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INSTALLED = HERE.parent / ".mcp-servers"
NODE = INSTALLED / "node" / "node_modules" / "@modelcontextprotocol"
PLANS = 1000


def servers(data: Path) -> dict[str, list[str]]:
    node = shutil.which("node")
    if node is None or not INSTALLED.exists():
        raise SystemExit("node and .mcp-servers are needed: run scripts/mcp-test-servers")
    node = os.path.realpath(node)

    def python(program: str) -> list[str]:
        return [str(INSTALLED / "python" / "bin" / program)]

    def npm(package: str) -> list[str]:
        return [node, str(NODE / package / "dist" / "index.js")]

    graph = data / "mcp" / "memory" / "memory.jsonl"
    return {
        "time": python("mcp-server-time"),
        "git": python("mcp-server-git"),
        "fetch": python("mcp-server-fetch"),
        "fs": npm("server-filesystem"),
        "memory": ["/usr/bin/env", f"MEMORY_FILE_PATH={graph}", *npm("server-memory")],
        "think": npm("server-sequential-thinking"),
    }


async def measure(model: str, runs: int) -> None:
    import corral
    from corral.runtime.compaction.tokens import count_tokens, tokenizer_name
    from corral.runtime.tool_search.context_windows import context_window
    from corral.runtime.tool_search.deferral import (
        DeferralRequest,
        SchemaTokens,
        listing,
        plan_tools,
    )
    from corral.tools.registry import LoadedTool

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # the sandbox uid reaches the drive: execute is offered too
        data = Path(tmp) / "data"
        async with corral.open(data) as platform:
            for name, command in servers(data).items():
                added = await platform.call_tool(
                    "connect", {"add": [{"kind": "mcp", "name": name, "command": command}]}
                )
                assert not added.is_error, added.text
            tools = await platform.visible_tools()
            packages = platform.kernel.registry.packages

            def native(tool: LoadedTool) -> bool:
                package = packages.get(tool.package)
                return package is not None and package.origin == "entry_point"

            def definition(tool: LoadedTool) -> int:
                schema = tool.spec.model_schema()
                return count_tokens(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))

            tokens = SchemaTokens()
            context = context_window(model)

            def plan(mode: str) -> tuple[int, int, int, int]:
                request = DeferralRequest(
                    mode=mode, share_percent=10.0, context_tokens=context, core=native, loaded=()
                )
                planned = plan_tools(tools, request, tokens)
                shown = sum(definition(t) for t in planned.shown)
                block = count_tokens(listing(planned.deferred) or "")
                return len(planned.shown), shown, len(planned.deferred), block

            mcp = [t for t in tools if not native(t)]
            print(f"tokenizer {tokenizer_name()}; {len(tools)} visible tools, {len(mcp)} from MCP")
            for mode in ("off", "on", "auto"):
                shown, shown_tokens, deferred, block = plan(mode)
                print(
                    f"{mode:4}  {shown:3} in full = {shown_tokens:6} tokens, {deferred:3} by name "
                    f"= {block:4} tokens: tool list {shown_tokens + block:6} tokens"
                )
            print(f"auto's threshold for {model}: {context // 10} tokens (10 % of {context})")
            print(f"MCP tools' definitions alone: {sum(definition(t) for t in mcp)} tokens")

            request = DeferralRequest(
                mode="auto", share_percent=10.0, context_tokens=1, core=native, loaded=()
            )
            per_plan = []
            for _ in range(runs):
                started = time.perf_counter()
                for _ in range(PLANS):
                    plan_tools(tools, request, tokens)
                per_plan.append((time.perf_counter() - started) / PLANS)
            print(
                f"one step's plan ({len(tools)} tools, counts cached), {runs} runs: "
                f"min {min(per_plan) * 1e6:.1f} µs  "
                f"median {statistics.median(per_plan) * 1e6:.1f} µs"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="anthropic:claude-sonnet-4-5")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(measure(options.model, options.runs))


if __name__ == "__main__":
    main()
