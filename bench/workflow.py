"""The scheduler's tick with 10,000 scheduled workflows, against iterating their crons.

    .venv/bin/python bench/workflow.py [--workflows N] [--ticks N]

The store holds N active workflows with cron schedules (written straight into the tables,
as `set` would leave them). The baseline is what a scheduler without a stored next slot
would do every tick: ask each of N croniter objects for its next time. A Corral tick is one
indexed query for due workflows plus work for those only; two cases are timed: an idle
tick (nothing due) and a tick where 10 slots are due and are skipped by the missed-slot
policy (the claim path without starting runs). Exits 1 when the idle tick's median is
over the 5 ms target.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from croniter import croniter
from sqlalchemy import insert

import corral
from corral.runtime.workflows import Scheduler, next_slot
from corral.runtime.workflows.setup import new_setup
from corral.store import workflow_tables as wt
from outcome import Figure, finish

TARGET_MS = 5.0
NOW = datetime(2027, 1, 4, 12, 0, tzinfo=UTC)


def crons(n: int) -> list[str]:
    return [f"{i % 60} {(i // 60) % 24} * * *" for i in range(n)]


def baseline(expressions: list[str], ticks: int) -> list[float]:
    iterators = [croniter(e, NOW) for e in expressions]
    times = []
    for _ in range(ticks):
        started = time.perf_counter()
        for it in iterators:
            it.get_next(datetime)
        times.append(time.perf_counter() - started)
    return times


async def fill(platform: corral.Platform, expressions: list[str], due: int) -> None:
    owner = (await platform.caller()).user_id
    workflows, versions = [], []
    for i, expression in enumerate(expressions):
        setup = {
            **new_setup(),
            "title": f"w{i}",
            "instruction": "x",
            "schedule": {"cron": expression, "timezone": "UTC"},
        }
        anchor = NOW - timedelta(days=3) if i < due else NOW
        workflows.append(
            {
                "id": f"w_{i:06d}",
                "owner_id": owner,
                "title": setup["title"],
                "status": "active",
                "version": 1,
                "next_fire_at": next_slot(setup["schedule"], anchor),
                "last_fire_at": anchor,
                "created_at": anchor,
                "updated_at": anchor,
            }
        )
        versions.append(
            {"workflow_id": f"w_{i:06d}", "version": 1, "setup": setup, "changed_by": owner,
             "note": "created", "created_at": anchor}
        )  # fmt: skip
    async with platform.sessions.begin() as session:
        await session.execute(insert(wt.Workflow), workflows)
        await session.execute(insert(wt.WorkflowVersion), versions)


async def ticks(scheduler: Scheduler, n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await scheduler.tick(NOW)
        times.append(time.perf_counter() - started)
    return times


async def main(count: int, rounds: int) -> list[Figure]:
    expressions = crons(count)
    base = baseline(expressions, rounds)
    with tempfile.TemporaryDirectory() as tmp:
        async with corral.open(Path(tmp) / "data") as platform:
            await platform.admin.set_live("workflow_missed_fire", "skip")
            await fill(platform, expressions, due=10)
            scheduler = platform.services.require(Scheduler)
            due = await ticks(scheduler, 1)  # the 10 missed slots are claimed and skipped
            idle = await ticks(scheduler, rounds)
    rows = [
        (f"baseline: {count:,} croniter get_next", base),
        (f"tick, {count:,} workflows, 10 due (skipped)", due),
        (f"tick, {count:,} workflows, none due", idle),
    ]
    reference = statistics.median(base)
    print(f"workflows: {count:,} · ticks: {rounds}")
    print(f"{'case':44} {'min ms':>8} {'median ms':>10} {'x baseline':>11}")
    for name, times in rows:
        median = statistics.median(times)
        print(f"{name:44} {min(times) * 1e3:8.2f} {median * 1e3:10.2f} {median / reference:11.4f}")
    idle_ms = statistics.median(idle) * 1e3
    return [
        Figure(
            name=name + " (median)",
            value=statistics.median(times) * 1e3,
            unit="ms",
            baseline=reference * 1e3 if times is not base else None,
            target=f"< {TARGET_MS:g} ms" if times is idle else "",
            met=idle_ms < TARGET_MS if times is idle else None,
        )
        for name, times in rows
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=20)
    options = parser.parse_args()
    finish("workflow", asyncio.run(main(options.workflows, options.ticks)))
