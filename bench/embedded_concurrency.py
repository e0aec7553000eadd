"""The embedded default under many conversations at several ``runs_max_concurrent`` values.

    .venv/bin/python bench/embedded_concurrency.py [--conversations 200] [--steps 5]
        [--values 8,16,30,64] [--model-ms 0,200]

Each value gets a fresh data folder (SQLite, in-process jobs) and the same load as
``bench/cluster.py``'s embedded pass: ``--conversations`` one-turn conversations of
``--steps`` model steps (a tool call to ``echo`` each, then a final answer), all started at
once. Two models: the ``script:`` model, which answers at once (the loop's own cost, CPU
bound), and a model that answers after ``--model-ms`` (an awaited sleep: what a provider's
round trip costs this process — nothing but the wait). Per value: wall time, CPU time of
this process and its children, how often a hot write found SQLite's write lock taken (the
writer then waits for it on its thread), and database lock errors (``database is locked``
raised anywhere, or a run not ``finished``).
Targets: with the model's latency, the shipped default is within 1.25x of the fastest value's
wall time (with a model that answers at once every value is CPU-bound and within noise of the
others: informative); no value meets a lock error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from sqlalchemy import event, select

import corral
from checkout import this_checkout
from corral.live_settings import LIVE_SETTINGS
from corral.store import runtime_tables as rt
from corral.store import writer as store_writer
from outcome import Figure, finish

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "fixtures" / "packages" / "demo"
STARTING = 10
WALL_TARGET = 1.25


@dataclass(slots=True)
class Counts:
    """What went on with SQLite's write lock during one pass."""

    waits: int = 0
    """Hot writes that found the lock taken and went to the writer's thread to wait."""
    errors: int = 0
    """``database is locked`` errors raised through SQLAlchemy or logged."""


COUNTS = Counts()


def count_lock_waits() -> None:
    """Count the inline writes that found the lock taken (the writer's ``_BUSY``)."""
    run_inline = store_writer.SqliteWriter._run_inline

    def counted(self: store_writer.SqliteWriter, work: Any) -> Any:
        done = run_inline(self, work)
        if done is store_writer._BUSY:
            COUNTS.waits += 1
        return done

    store_writer.SqliteWriter._run_inline = counted  # type: ignore[method-assign]


class LockedLogs(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info else "")
        if "database is locked" in text:
            COUNTS.errors += 1


def script(folder: Path, steps: int) -> str:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "echo", "args": {"text": f"step {i}"}}]} for i in range(1, steps)
    ]
    turns.append({"text": "Done."})
    path = folder / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"script:{path}"


def slow_model(steps: int, ms: int) -> FunctionModel:
    """Call ``echo`` until the last of ``steps`` turns, each answer after ``ms``."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(ms / 1000)
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        if done + 1 >= steps:
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(parts=[ToolCallPart("echo", {"text": f"step {done}"})])

    return FunctionModel(respond)


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True, slots=True)
class Pass:
    value: int
    wall: float
    cpu: float
    waits: int
    errors: int
    unfinished: int


async def one_pass(
    folder: Path, model: str, value: int, conversations: int, steps: int, ms: int
) -> Pass:
    data = folder / f"data-{value}-{ms}"
    async with corral.open(data, package_paths=[DEMO]) as platform:
        if ms:
            platform.runtime.models.register(model, slow_model(steps, ms))
        if value:  # 0: the warm-up, at the default
            await platform.admin.set_live("runs_max_concurrent", value)
        engine = platform.kernel.engine

        def on_error(context: Any) -> None:
            if "database is locked" in str(context.original_exception):
                COUNTS.errors += 1

        event.listen(engine.sync_engine, "handle_error", on_error)
        gate = asyncio.Semaphore(STARTING)

        async def start() -> str:
            async with gate:
                return (await platform.runtime.start_chat("go", model=model)).id

        COUNTS.waits = COUNTS.errors = 0
        cpu, started = cpu_seconds(), time.perf_counter()
        run_ids = list(await asyncio.gather(*(start() for _ in range(conversations))))
        await asyncio.gather(*(platform.runtime.wait_run(r) for r in run_ids))
        wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        async with platform.kernel.sessions() as session:
            statuses = (
                await session.scalars(select(rt.Run.status).where(rt.Run.id.in_(run_ids)))
            ).all()
        unfinished = sum(1 for s in statuses if s != "finished")
        return Pass(value, wall, cpu, COUNTS.waits, COUNTS.errors, unfinished)


async def measure(
    conversations: int, steps: int, values: list[int], latencies: list[int]
) -> list[Figure]:
    count_lock_waits()
    logging.getLogger().addHandler(LockedLogs())
    default = int(LIVE_SETTINGS["runs_max_concurrent"].default)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="corral-bench-embedded-") as tmp:
        scripted = script(Path(tmp), steps)
        # Imports and first-use caches are paid here, not by the first value measured.
        await one_pass(Path(tmp), scripted, 0, min(conversations, 20), steps, 0)
        for ms in latencies:
            model = f"bench:model-{ms}ms" if ms else scripted
            passes: list[Pass] = []
            for value in values:
                done = await one_pass(Path(tmp), model, value, conversations, steps, ms)
                print(
                    f"model {ms} ms, runs_max_concurrent {value}: {done.wall:.1f} s wall, "
                    f"{done.cpu:.1f} s CPU, {done.waits} lock waits, {done.errors} lock "
                    f"errors, {done.unfinished} not finished",
                    flush=True,
                )
                passes.append(done)
            load = f"{conversations}x{steps}, model {ms} ms"
            figures += judged(passes, default if ms else None, load)
    if default not in values:
        print(f"the default ({default}) was not among the values measured", file=sys.stderr)
    return figures


def judged(passes: list[Pass], default: int | None, load: str) -> list[Figure]:
    """The figures of one load; the wall time of ``default`` (None: none) is judged."""
    fastest = min(p.wall for p in passes)
    figures: list[Figure] = []
    for p in passes:
        mark = " (default)" if p.value == default else ""
        figures += [
            Figure(
                name=f"{load}: wall, concurrency {p.value}{mark}",
                value=p.wall,
                unit="s",
                baseline=fastest,
                target=f"<= {WALL_TARGET}x fastest" if mark else "",
                met=p.wall <= WALL_TARGET * fastest if mark else None,
            ),
            Figure(name=f"{load}: CPU, concurrency {p.value}", value=p.cpu, unit="s"),
            Figure(
                name=f"{load}: lock waits, concurrency {p.value}",
                value=float(p.waits),
                unit="writes",
            ),
            Figure(
                name=f"{load}: lock errors + unfinished runs, concurrency {p.value}",
                value=float(p.errors + p.unfinished),
                unit="count",
                target="= 0",
                met=p.errors + p.unfinished == 0,
            ),
        ]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--values", default="8,16,30,64", help="runs_max_concurrent values")
    parser.add_argument("--model-ms", default="0,200", help="model answer latencies to load with")
    options = parser.parse_args()
    this_checkout()
    values = [int(v) for v in options.values.split(",") if v]
    latencies = [int(v) for v in options.model_ms.split(",") if v]
    figures = asyncio.run(measure(options.conversations, options.steps, values, latencies))
    finish("embedded_concurrency", figures)


if __name__ == "__main__":
    main()
