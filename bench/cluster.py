"""Scale-out: scripted conversations over `corral worker` processes against the embedded
default, then the same while a worker is SIGKILLed mid-load.

    .venv/bin/python bench/cluster.py [--conversations 200] [--steps 5] [--workers 3]
        [--terminate-backends]

Each conversation is one turn of ``--steps`` model steps (a tool call to ``echo`` each,
then a final answer). The baseline is the same load on the embedded default (SQLite,
in-process jobs) in the same run. The cluster runs on a throwaway PostgreSQL server with
``--workers`` worker processes; a third pass SIGKILLs one worker once a third of the steps
are stored. Every pass counts the rows exactly: every run finished, ``steps`` model turns
per run, every tool call answered once (a call cut off by the kill is answered
``interrupted``), nothing lost and nothing doubled. With ``--terminate-backends`` the kill
pass also terminates every connection to the database (``pg_terminate_backend``) once half
the steps are stored: the runs cut off from it are retried, none ends ``failed``. Exits 1
when a count is off; the throughput figures are informative. Skips (exit 2) without PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from sqlalchemy import func, select

import corral
from corral.store import runtime_tables as rt
from outcome import Figure, finish, skip

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "fixtures" / "packages" / "demo"
STARTING = 10


def script(folder: Path, steps: int) -> str:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "echo", "args": {"text": f"step {i}"}}]} for i in range(1, steps)
    ]
    turns.append({"text": "Done."})
    path = folder / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"script:{path}"


class Tally:
    """What one pass stored, counted from the rows."""

    def __init__(self) -> None:
        self.exact = True
        self.problems: list[str] = []

    def off(self, what: str) -> None:
        self.exact = False
        if len(self.problems) < 5:
            self.problems.append(what)


async def count(platform: corral.Platform, run_ids: list[str], steps: int) -> Tally:
    tally = Tally()
    r, row = rt.Run, rt.ConversationRow
    async with platform.kernel.sessions() as session:
        statuses = dict(
            (await session.execute(select(r.id, r.status).where(r.id.in_(run_ids)))).all()
        )
        kinds = (
            await session.execute(
                select(row.run_id, row.kind, row.call_id, func.count())
                .where(row.run_id.in_(run_ids))
                .group_by(row.run_id, row.kind, row.call_id)
            )
        ).all()
    turns: Counter[str] = Counter()
    calls: dict[str, Counter[str]] = {}
    results: dict[str, Counter[str]] = {}
    for run_id, kind, call_id, n in kinds:
        if kind == "model_turn":
            turns[run_id] += n
        elif kind == "tool_call":
            calls.setdefault(run_id, Counter())[call_id] += n
        elif kind == "tool_result":
            results.setdefault(run_id, Counter())[call_id] += n
    for run_id in run_ids:
        if statuses.get(run_id) != "finished":
            tally.off(f"{run_id} is {statuses.get(run_id)}")
        if turns[run_id] != steps:
            tally.off(f"{run_id} stored {turns[run_id]} model turns, not {steps}")
        made, answered = calls.get(run_id, Counter()), results.get(run_id, Counter())
        if len(made) != steps - 1 or set(made.values()) != {1} or answered != made:
            tally.off(f"{run_id}: calls {dict(made)} answered {dict(answered)}")
    return tally


async def load(platform: corral.Platform, model: str, conversations: int) -> list[str]:
    """Start every conversation; at most ``STARTING`` start at once (the starting process
    is one client with a small connection pool), all of them run at once."""
    gate = asyncio.Semaphore(STARTING)

    async def start() -> str:
        async with gate:
            return (await platform.runtime.start_chat("go", model=model)).id

    return list(await asyncio.gather(*(start() for _ in range(conversations))))


async def embedded(folder: Path, model: str, conversations: int, steps: int) -> tuple[float, Tally]:
    async with corral.open(folder / "embedded", package_paths=[DEMO]) as platform:
        await platform.admin.set_live("runs_max_concurrent", 64)
        started = time.perf_counter()
        run_ids = await load(platform, model, conversations)
        await asyncio.gather(*(platform.runtime.wait_run(r) for r in run_ids))
        took = time.perf_counter() - started
        return conversations * steps / took, await count(platform, run_ids, steps)


def start_workers(data_dir: Path, count_: int, logs: Path) -> list[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    workers = []
    for i in range(count_):
        with (logs / f"worker-{i}.log").open("ab") as log:
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "corral", "--data-dir", str(data_dir), "worker"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
    return workers


async def workers_up(platform: corral.Platform, expected: int) -> None:
    """Wait until ``expected`` workers heartbeat (they import and connect first)."""
    from sqlalchemy import text

    query = text("SELECT count(*) FROM procrastinate_workers")
    while True:
        async with platform.kernel.sessions() as session:
            if int(await session.scalar(query) or 0) >= expected:
                return
        await asyncio.sleep(0.2)


async def cluster(
    folder: Path,
    database_url: str,
    model: str,
    conversations: int,
    steps: int,
    worker_count: int,
    kill: bool,
    terminate: bool = False,
) -> tuple[float, Tally]:
    data_dir = folder / ("cluster-kill" if kill else "cluster")
    data_dir.mkdir()
    settings = {
        "database_url": database_url,
        "run_jobs": "cluster",
        "package_paths": [str(DEMO)],
        "worker_concurrency": 32,
        "worker_heartbeat_seconds": 0.5,
        "worker_stalled_seconds": 4.0,
        "cluster_sweep_seconds": 1,
    }
    (data_dir / "corral.toml").write_text(
        "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()) + "\n"
    )
    async with corral.open(data_dir) as platform:
        workers = start_workers(data_dir, worker_count, folder)
        try:
            await asyncio.wait_for(workers_up(platform, worker_count), 120)
            started = time.perf_counter()
            run_ids = await load(platform, model, conversations)
            if kill:
                await stored_turns(platform, conversations * steps // 3)
                workers[0].send_signal(signal.SIGKILL)
                workers[0].wait()
                if terminate:
                    await stored_turns(platform, conversations * steps // 2)
                    print(f"terminated {await terminate_backends(database_url)} connections")
            await asyncio.gather(*(platform.runtime.wait_run(r) for r in run_ids))
            took = time.perf_counter() - started
            if terminate:
                said = await asyncio.to_thread(worker_logs, folder)
                for what in ("met a database outage", "left running with no job", "taken over"):
                    print(f"worker logs: {said.count(what)} x {what!r}")
            return conversations * steps / took, await count(platform, run_ids, steps)
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()


def worker_logs(folder: Path) -> str:
    return "\n".join(log.read_text() for log in folder.glob("worker-*.log"))


async def terminate_backends(database_url: str) -> int:
    """Terminate every connection to the database (an outage the workers must ride out)."""
    import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    admin = await asyncpg.connect(
        host=str(url.query["host"]), user=url.username, database="postgres"
    )
    try:
        return len(
            await admin.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                url.database,
            )
        )
    finally:
        await admin.close()


async def stored_turns(platform: corral.Platform, at_least: int) -> None:
    row = rt.ConversationRow
    query = select(func.count()).where(row.kind == "model_turn")
    while True:
        async with platform.kernel.sessions() as session:
            if int(await session.scalar(query) or 0) >= at_least:
                return
        await asyncio.sleep(0.05)


async def main(conversations: int, steps: int, worker_count: int, terminate: bool) -> None:
    sys.path.insert(0, str(REPO))
    from tests.postgres import new_database, throwaway_server

    with tempfile.TemporaryDirectory(prefix="corral-bench-cluster-") as tmp:
        folder = Path(tmp)
        model = script(folder, steps)
        try:
            with throwaway_server() as socket_dir:
                base, base_tally = await embedded(folder, model, conversations, steps)
                plain, plain_tally = await cluster(
                    folder,
                    new_database(socket_dir),
                    model,
                    conversations,
                    steps,
                    worker_count,
                    False,
                )
                killed, killed_tally = await cluster(
                    folder,
                    new_database(socket_dir),
                    model,
                    conversations,
                    steps,
                    worker_count,
                    True,
                    terminate,
                )
        except FileNotFoundError as missing:
            skip("cluster", str(missing))
    for name, tally in (("embedded", base_tally), ("cluster", plain_tally), ("kill", killed_tally)):
        for problem in tally.problems:
            print(f"{name}: {problem}", file=sys.stderr)
    finish(
        "cluster",
        [
            Figure(name="embedded steps/s", value=base, unit="steps/s"),
            Figure(
                name=f"cluster steps/s ({worker_count} workers)",
                value=plain,
                unit="steps/s",
                baseline=base,
            ),
            Figure(
                name="cluster steps/s, one worker SIGKILLed",
                value=killed,
                unit="steps/s",
                baseline=base,
            ),
            *(
                Figure(
                    name=f"{name}: rows exact",
                    value=1.0 if tally.exact else 0.0,
                    unit="bool",
                    target="= 1",
                    met=tally.exact,
                )
                for name, tally in (
                    ("embedded", base_tally),
                    ("cluster", plain_tally),
                    ("kill", killed_tally),
                )
            ),
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--terminate-backends", action="store_true")
    options = parser.parse_args()
    # SIGTERM (a `timeout`) unwinds like Ctrl-C, so the workers and the server are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    asyncio.run(
        main(options.conversations, options.steps, options.workers, options.terminate_backends)
    )
