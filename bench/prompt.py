"""Prompt build time of a 10,000-row conversation with 200 compactions applied.

    .venv/bin/python bench/prompt.py [--rows N] [--compactions N] [--builds N]

A conversation of ``--rows`` timeline rows (user message, model turn, tool call, tool
result, repeated) gets ``--compactions`` compact_history calls, each truncating one tool
output, made through the dispatch pipeline. Then, in one process:

- cold: the first build after the cache is dropped (reads every row, works out the trims);
- warm, no compactions: one new row since the last build (the baseline, measured first);
- warm, with the compactions: the same, with the compaction overlay applied every step;
- after a toggle: the build right after "Show full" switched one compaction off;
- naive: the same trims as one overlay function each, every one copying the row list, for
  comparison with the indexed overlay.

Target: a warm build with 200 compactions on 10,000 rows under 20 ms (its baseline: the
warm build without compactions, same run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import corral
from corral.runtime.compaction import Compactions
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt import PromptRequest, PromptView
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from long_conversation import fill
from outcome import Figure, finish

DEMO = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "packages" / "demo"
"""The demo test package: it has the ``echo`` tool the compacted outputs belong to."""


async def warm_builds(rt: Runtime, request: PromptRequest, builds: int, tag: str) -> list[float]:
    timings = []
    for i in range(builds):
        await rt.append(
            request.conversation_id, [NewRow(kind="user_message", data={"text": f"{tag} {i}"})]
        )
        started = time.perf_counter()
        await rt.prompt.build(request)
        timings.append(time.perf_counter() - started)
    return timings


def naive_overlay(seq: int) -> Any:
    def overlay(rows: Sequence[TimelineRow], view: PromptView) -> Sequence[TimelineRow]:
        out = list(rows)
        for i, row in enumerate(out):
            if row.seq == seq:
                result = {**row.data["result"], "content": [{"type": "text", "text": "[cut]"}]}
                out[i] = replace(row, data={**row.data, "result": result})
        return out

    return overlay


async def measure(folder: Path, rows: int, compactions: int, builds: int) -> list[Figure]:
    script = folder / "script.json"
    async with corral.open(folder / "data", package_paths=[DEMO]) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation(model=f"script:{script}")
        await fill(rt, conversation.id, rows, tool="echo")
        turn = await platform.chat("one step", conversation_id=conversation.id)
        run = await rt.runs.get(turn.run_id)
        owner = await platform.caller()
        state = await platform.config.dispatch_state()
        request = PromptRequest(
            conversation_id=conversation.id,
            run=run,
            agent=run.agent,
            instructions="You are a benchmark.",
            caller=owner,
            tools=await rt.visible_tools(run, owner),
            media=MediaSupport(),
            sources=state.sources,
            live=state.live,
        )
        await rt.prompt.build(request)
        baseline = await warm_builds(rt, request, builds, "base")

        started = time.perf_counter()
        step = max(1, (rows // 4) // compactions)
        for i in range(compactions):
            result = await platform.call_tool(
                "compact_history",
                {
                    "action": "truncate",
                    "targets": [{"tool_use_id": f"k{i * step}"}],
                    "keep_chars": 100,
                },
                conversation_id=conversation.id,
            )
            assert not result.is_error, result.text
        calls = time.perf_counter() - started

        rt.prompt.forget(conversation.id)
        started = time.perf_counter()
        prompt = await rt.prompt.build(request)
        cold = time.perf_counter() - started
        trimmed = sum(
            1
            for message in prompt.messages
            for part in message.parts
            if part.part_kind == "tool-return" and "compact_history" in str(part.content)
        )
        assert trimmed == compactions, (trimmed, compactions)
        warm = await warm_builds(rt, request, builds, "warm")

        service = platform.services.require(Compactions)
        first = (await service.list_compactions(conversation.id))[0]["id"]
        await service.set_applied(conversation.id, first, False)
        started = time.perf_counter()
        await rt.prompt.build(request)
        toggled = time.perf_counter() - started

        overlays = rt.prompt.overlays
        saved = list(overlays)
        overlays[:] = [naive_overlay(4 * i * step + 4) for i in range(compactions)]
        naive = await warm_builds(rt, request, max(3, builds // 4), "naive")
        overlays[:] = saved

    figures = [
        (f"{compactions} compact_history calls through the pipeline", calls),
        ("cold build (reads every row)", cold),
        ("warm build, no compactions (median)", statistics.median(baseline)),
        (f"warm build, {compactions} compactions (median)", median := statistics.median(warm)),
        (f"warm build, {compactions} compactions (max of {builds})", max(warm)),
        ("build right after Show full on one compaction", toggled),
        (f"naive: {compactions} overlay functions (median)", statistics.median(naive)),
    ]
    print(f"conversation: {rows:,} rows, {compactions} compactions (truncate, one output each)")
    warm_label = f"warm build, {compactions} compactions (median)"
    base = statistics.median(baseline) * 1e3
    return [
        Figure(
            name=label,
            value=seconds * 1e3,
            unit="ms",
            baseline=base if label.startswith(("warm", "naive", "build")) else None,
            target="< 20 ms" if label == warm_label else "",
            met=median < 0.020 if label == warm_label else None,
        )
        for label, seconds in figures
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--compactions", type=int, default=200)
    parser.add_argument("--builds", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "script.json").write_text('{"turns": [{"text": "ok"}]}')
        figures = asyncio.run(measure(folder, options.rows, options.compactions, options.builds))
    finish("prompt", figures)


if __name__ == "__main__":
    main()
