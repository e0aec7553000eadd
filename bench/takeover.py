"""Takeover time at default cluster settings: SIGKILL the worker holding a run and time
until another worker has claimed it, several times over; count false takeovers.

    .venv/bin/python bench/takeover.py [--rounds 7] [--workers 2]

Settings are the defaults (``worker_heartbeat_seconds``, ``worker_stalled_seconds``,
``cluster_sweep_seconds``; ``--set NAME=SECONDS`` overrides one): only the database and the
packages are set. Each round starts a
run whose one call holds (the test package's ``hold``, which says through a named pipe that
it started), SIGKILLs the worker advancing it and polls the run's ``worker`` field until
another worker claims it; the run then finishes. A takeover of a run whose worker was not
killed is false; the target is a median under 5 s with none. Skips (exit 2) without
PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import corral
from checkout import this_checkout
from cluster_workers import start_worker, workers_up
from outcome import Figure, finish, skip

REPO = Path(__file__).resolve().parents[1]
CLUSTERKIT = REPO / "tests" / "runtime" / "cluster" / "fixtures" / "clusterkit"


def read_fifo(path: Path) -> None:
    with path.open() as pipe:
        pipe.read()


async def claimed_elsewhere(platform: corral.Platform, run_id: str, holder: str) -> None:
    """Poll the run's worker field: another process claims it, nothing here is told."""
    for _ in range(3000):  # 60 s
        if (await platform.runtime.runs.get(run_id)).worker not in (holder, None):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"run {run_id} was not taken over within 60 s")


async def rounds(
    folder: Path, database_url: str, count: int, worker_count: int, timing: dict[str, float]
) -> list[float]:
    data_dir = folder / "data"
    data_dir.mkdir()
    settings = {"database_url": database_url, "package_paths": [str(CLUSTERKIT)], **timing}
    (data_dir / "corral.toml").write_text(
        "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()) + "\n"
    )
    took: list[float] = []
    async with corral.open(data_dir, run_jobs="cluster") as platform:
        rt = platform.runtime
        workers = [start_worker(data_dir, folder / "workers.log") for _ in range(worker_count)]
        try:
            await asyncio.wait_for(workers_up(platform, worker_count), 120)
            for i in range(count):
                fifo = folder / f"hold-{i}"
                os.mkfifo(fifo)
                script = folder / f"script-{i}.json"
                hold = {"name": "hold", "args": {"fifo": str(fifo)}}
                script.write_text(
                    json.dumps({"turns": [{"tool_calls": [hold]}, {"text": "Carried on."}]})
                )
                run = await rt.start_chat("hold", model=f"script:{script}")
                await asyncio.wait_for(asyncio.to_thread(read_fifo, fifo), 60)
                holder = (await rt.runs.get(run.id)).worker
                assert holder is not None
                victim = next(w for w in workers if w.pid == int(holder.split(":")[1]))
                victim.send_signal(signal.SIGKILL)
                killed_at = time.perf_counter()
                victim.wait()
                await claimed_elsewhere(platform, run.id, holder)
                took.append(time.perf_counter() - killed_at)
                settled = await asyncio.wait_for(rt.wait_run(run.id), 60)
                assert settled.status == "finished", settled
                workers = [w for w in workers if w.poll() is None]
                workers.append(start_worker(data_dir, folder / "workers.log"))
                await asyncio.wait_for(workers_up(platform, worker_count), 120)
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
    return took


def takeovers_logged(folder: Path) -> int:
    log = folder / "workers.log"
    return log.read_text().count(" taken over from worker ") if log.exists() else 0


async def main(count: int, worker_count: int, timing: dict[str, float]) -> None:
    sys.path.insert(0, str(REPO))
    from tests.postgres import new_database, throwaway_server

    with tempfile.TemporaryDirectory(prefix="corral-bench-takeover-") as tmp:
        folder = Path(tmp)
        try:
            with throwaway_server() as socket_dir:
                took = await rounds(folder, new_database(socket_dir), count, worker_count, timing)
        except FileNotFoundError as missing:
            skip("takeover", str(missing))
        false_takeovers = takeovers_logged(folder) - len(took)
    print("takeovers (s): " + ", ".join(f"{t:.2f}" for t in took), file=sys.stderr)
    median = statistics.median(took)
    finish(
        "takeover",
        [
            Figure(name="takeover min", value=min(took), unit="s"),
            Figure(name="takeover median", value=median, unit="s", target="< 5 s", met=median < 5),
            Figure(name="takeover max", value=max(took), unit="s"),
            Figure(
                name="false takeovers",
                value=float(false_takeovers),
                unit="count",
                target="= 0",
                met=false_takeovers == 0,
            ),
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="a timing setting instead of its default, e.g. worker_stalled_seconds=10",
    )
    options = parser.parse_args()
    this_checkout()
    timing = {name: float(value) for name, _, value in (s.partition("=") for s in options.set)}
    if "cluster_sweep_seconds" in timing:
        timing["cluster_sweep_seconds"] = int(timing["cluster_sweep_seconds"])
    asyncio.run(main(options.rounds, options.workers, timing))
