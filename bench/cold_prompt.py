"""Cold prompt build: the first build of a long conversation in a process that has not
seen it (every resumed run on another process pays it), beside reading its rows alone.

    .venv/bin/python bench/cold_prompt.py [--sizes 10000,50000] [--rounds 3]

For each size a conversation of that many rows (question, answer, tool call, 200-character
result, repeated) is built cold ``--rounds`` times; each round also reads the rows alone
through the bulk read the build uses (the same-run baseline) and through the SQLAlchemy
query (what a cold build read before issue 18). Figures are the best round.

Targets (issue 18): 10,000 rows under 30 ms, 50,000 rows under 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import corral
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt import PromptRequest
from long_conversation import fill
from outcome import Figure, finish

DEMO = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "packages" / "demo"
"""The demo test package: it has the ``echo`` tool the stored calls name."""
TARGETS_MS = {10_000: 30.0, 50_000: 150.0}


async def timed(action: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1e3


async def measure_size(folder: Path, rows: int, rounds: int) -> list[Figure]:
    script = folder / "script.json"
    script.write_text('{"turns": [{"text": "ok"}]}')
    async with corral.open(folder / f"data-{rows}", package_paths=[DEMO]) as platform:
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

        async def cold() -> None:
            rt.prompt.forget(conversation.id)
            await rt.prompt.build(request)

        reads, queries, builds = [], [], []
        for _ in range(rounds):
            reads.append(await timed(lambda: rt.conversations.rows_in_bulk(conversation.id)))
            queries.append(await timed(lambda: rt.conversations.rows(conversation.id)))
            builds.append(await timed(cold))
    read, build, target = min(reads), min(builds), TARGETS_MS.get(rows)
    return [
        Figure(name=f"{rows:,} rows: read alone (bulk)", value=read, unit="ms"),
        Figure(
            name=f"{rows:,} rows: read by SQLAlchemy query",
            value=min(queries),
            unit="ms",
            baseline=read,
        ),
        Figure(
            name=f"{rows:,} rows: cold build",
            value=build,
            unit="ms",
            baseline=read,
            target=f"< {target:.0f} ms" if target else "",
            met=build < target if target else None,
        ),
    ]


async def measure(sizes: list[int], rounds: int) -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            figures += await measure_size(Path(tmp), rows, rounds)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    finish("cold_prompt", asyncio.run(measure(sizes, options.rounds)))


if __name__ == "__main__":
    main()
