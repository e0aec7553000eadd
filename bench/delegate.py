"""The overhead of a foreground delegate: a turn that delegates to a one-turn scripted
child, against the same one-turn scripted answer run directly as a chat turn.

    .venv/bin/python bench/delegate.py [--rounds N]

Both sides run in one process on one SQLite store with the ``script:`` model. The direct
side is one chat turn answering in text. The delegate side is a chat turn whose first step
calls ``delegate`` (profile auto, so no approval), whose child answers in one text turn,
and whose second step answers in text: the difference is what delegating costs (a child
conversation, its run and job, the run folder on disk, the answer back, one more step).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import corral
from outcome import Figure, finish


def script(folder: Path, name: str, *turns: object) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"turns": list(turns), "after_end": "cycle"}))
    return f"script:{path}"


async def timed(platform: corral.Platform, model: str, rounds: int) -> list[float]:
    await platform.chat("warm up", model=model, profile="auto")
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        turn = await platform.chat("go", model=model, profile="auto")
        times.append(time.perf_counter() - started)
        assert turn.status == "finished", (turn.status, turn.detail)
    return times


async def main(rounds: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        direct = script(folder, "direct", {"text": "The answer."})
        child = script(folder, "child", {"text": "The answer."})
        parent = script(
            folder,
            "parent",
            {"tool_calls": [{"name": "delegate", "args": {"task": "answer", "model": child}}]},
            {"text": "Relayed."},
        )
        async with corral.open(folder / "data") as platform:
            plain = await timed(platform, direct, rounds)
            delegated = await timed(platform, parent, rounds)
    base, over = statistics.median(plain), statistics.median(delegated)
    print(f"rounds: {rounds}")
    print(f"{'case':34} {'min ms':>8} {'median ms':>10} {'x direct':>9}")
    print(f"{'direct one-turn chat':34} {min(plain) * 1e3:8.1f} {base * 1e3:10.1f} {1.0:9.2f}")
    print(
        f"{'delegate to a one-turn child':34} {min(delegated) * 1e3:8.1f} "
        f"{over * 1e3:10.1f} {over / base:9.2f}"
    )
    print(f"overhead of delegating (median): {(over - base) * 1e3:.1f} ms")
    return [
        Figure(name="direct one-turn chat (median)", value=base * 1e3, unit="ms"),
        Figure(
            name="delegate to a one-turn child (median)",
            value=over * 1e3,
            unit="ms",
            baseline=base * 1e3,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    finish("delegate", asyncio.run(main(parser.parse_args().rounds)))
