"""Scale-out: scripted conversations over `corral worker` processes against the embedded
default, then the same while a worker is SIGKILLed mid-load.

    .venv/bin/python bench/cluster.py [--conversations 200] [--steps 5] [--workers 3]
        [--concurrency 32] [--terminate-backends] [--pause-worker SECONDS] [--cli-during]
        [--kill-serve] [--keep-logs FOLDER] [--chaos-only] [--wait SECONDS]

Each conversation is one turn of ``--steps`` model steps (a tool call to ``echo`` each,
then a final answer). The baseline is the same load on the embedded default (SQLite,
in-process jobs) in the same run. The cluster runs on a throwaway PostgreSQL server with
``--workers`` worker processes; a third pass SIGKILLs one worker once a third of the steps
are stored. Every pass counts the rows exactly: every run finished, ``steps`` model turns
per run, every tool call answered once (a call cut off by the kill is answered
``interrupted``), nothing lost and nothing doubled. With ``--terminate-backends`` the kill
pass also terminates every connection to the database (``pg_terminate_backend``) once half
the steps are stored: the runs cut off from it are retried, none ends ``failed``.

More chaos in the kill pass: ``--pause-worker`` SIGSTOPs a worker once half the steps are
stored for that many seconds, then SIGCONTs it: of the workers but the killed one, the one
holding the most runs then. Those run under hostnames of their own (UTS namespaces, as on
other machines): only their heartbeats tell they stalled, never a pid.
``--cli-during`` runs ``corral approvals list`` as a subprocess on the same data folder
right after the kill and during the pause: it must recover nothing. ``--kill-serve`` runs a
``corral serve`` on the folder beside the workers, SIGKILLs it with the worker and starts it
again at once: its start must recover nothing either. ``--concurrency`` with
``--workers`` sets the connection pressure (20 x 5 goes past the server's 100 connections).
A worker is killed or paused once it holds a run (within 30 s); the figures say how many it
held.
The kill pass prints runs finished, steps doubled (a call with two results) and lost (a
call with none), the time from each kill or pause until each run its worker held was
claimed by another (min/median/max), the ``too many clients`` refusals in the server's log
and the outages the workers logged. Exits 1 when a count is off; the throughput figures are
informative. Skips (exit 2) without PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Row, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

import corral
from checkout import child_env, this_checkout
from cluster_workers import serve_up, start_serve, start_worker, workers_up
from corral.store import runtime_tables as rt
from corral.store.outages import database_unavailable
from outcome import Figure, finish, skip

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "fixtures" / "packages" / "demo"
STARTING = 10
T = TypeVar("T")


def script(folder: Path, steps: int) -> str:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "echo", "args": {"text": f"step {i}"}}]} for i in range(1, steps)
    ]
    turns.append({"text": "Done."})
    path = folder / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"script:{path}"


async def riding_out(work: Callable[[], Awaitable[T]]) -> T:
    """``work``, tried again while the database refuses this process (the workers may hold
    every connection slot under ``--concurrency`` pressure)."""
    while True:
        try:
            return await work()
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            await asyncio.sleep(0.2)


async def read(platform: corral.Platform, query: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """One read of the bench's own, riding out refused connections."""

    async def once() -> T:
        async with platform.kernel.sessions() as session:
            return await query(session)

    return await riding_out(once)


async def rows_of(platform: corral.Platform, statement: Select[Any]) -> list[Row[Any]]:
    async def query(session: AsyncSession) -> list[Row[Any]]:
        return list((await session.execute(statement)).all())

    return await read(platform, query)


class Tally:
    """What one pass stored, counted from the rows."""

    def __init__(self) -> None:
        self.exact = True
        self.problems: list[str] = []
        self.finished = 0
        self.doubled = 0
        """Calls stored twice, or answered by more than one result."""
        self.lost = 0
        """Calls without a result."""

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
        if statuses.get(run_id) == "finished":
            tally.finished += 1
        else:
            tally.off(f"{run_id} is {statuses.get(run_id)}")
        if turns[run_id] != steps:
            tally.off(f"{run_id} stored {turns[run_id]} model turns, not {steps}")
        made, answered = calls.get(run_id, Counter()), results.get(run_id, Counter())
        tally.doubled += sum(max(0, n - 1) for n in (*made.values(), *answered.values()))
        tally.lost += sum(1 for call in made if answered[call] == 0)
        if len(made) != steps - 1 or set(made.values()) != {1} or answered != made:
            tally.off(f"{run_id}: calls {dict(made)} answered {dict(answered)}")
    return tally


async def load(platform: corral.Platform, model: str, conversations: int) -> list[str]:
    """Start every conversation; at most ``STARTING`` start at once (the starting process
    is one client with a small connection pool), all of them run at once."""
    gate = asyncio.Semaphore(STARTING)

    async def start() -> str:
        async with gate:
            return (await riding_out(lambda: platform.runtime.start_chat("go", model=model))).id

    return list(await asyncio.gather(*(start() for _ in range(conversations))))


async def embedded(folder: Path, model: str, conversations: int, steps: int) -> tuple[float, Tally]:
    async with corral.open(folder / "embedded", package_paths=[DEMO]) as platform:
        await platform.admin.set_live("runs_max_concurrent", 64)
        started = time.perf_counter()
        run_ids = await load(platform, model, conversations)
        await asyncio.gather(*(platform.runtime.wait_run(r) for r in run_ids))
        took = time.perf_counter() - started
        return conversations * steps / took, await count(platform, run_ids, steps)


@dataclass(frozen=True, slots=True, kw_only=True)
class Chaos:
    """What the kill pass does to the cluster while it runs."""

    kill: bool = False
    terminate: bool = False
    pause_seconds: float = 0.0
    cli_during: bool = False
    serve: bool = False


@dataclass(slots=True)
class Disorder:
    """What the chaos did and what the cluster logged meanwhile."""

    held: dict[str, int] = field(default_factory=dict)
    """Running runs the killed or paused worker held at the kill or the pause (the key)."""
    takeovers: dict[str, list[float]] = field(default_factory=dict)
    """Seconds from a kill or pause (the key) until each run its worker held was claimed
    by another."""
    kept: int = 0
    """Runs of a killed or paused worker that ended without being taken over."""
    cli: list[str] = field(default_factory=list)
    """How each ``corral approvals list`` during the chaos ended."""
    cli_failed: int = 0
    serve: list[str] = field(default_factory=list)
    """How each start of the `corral serve` beside the workers ended (up, or its exit)."""
    refused_connections: int = 0
    """``too many clients`` refusals in the server's log during the pass."""
    outages: int = 0
    """Runs the workers handed back after a database outage."""
    released: int = 0
    """Running runs the sweep found with no job and released."""
    unsettled: int = 0
    """Runs still not ended when the pass stopped waiting."""


async def cluster(
    folder: Path,
    server: str,
    model: str,
    conversations: int,
    steps: int,
    worker_count: int,
    concurrency: int,
    chaos: Chaos,
    wait_seconds: float,
) -> tuple[float, Tally, Disorder]:
    from tests.postgres import new_database

    database_url = new_database(server)
    name = "cluster-kill" if chaos.kill else "cluster"
    data_dir = folder / name
    data_dir.mkdir()
    settings = {
        "database_url": database_url,
        "run_jobs": "cluster",
        "package_paths": [str(DEMO)],
        "worker_concurrency": concurrency,
        "worker_heartbeat_seconds": 0.5,
        "worker_stalled_seconds": 4.0,
        "cluster_sweep_seconds": 1,
    }
    (data_dir / "corral.toml").write_text(
        "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()) + "\n"
    )
    disorder = Disorder()
    refused_before = refusals(server)
    async with corral.open(data_dir) as platform:
        workers = [
            start_worker(
                data_dir,
                folder / f"{name}-worker-{i}.log",
                # The ones that may be paused as on other machines: see the module's text.
                hostname=f"elsewhere-{i}" if chaos.pause_seconds and i > 0 else None,
            )
            for i in range(worker_count)
        ]
        watches: list[asyncio.Task[None]] = []
        serve_log = folder / f"{name}-serve.log"
        serves = [start_serve(data_dir, serve_log) if chaos.serve else None]
        aftermath: asyncio.Task[None] | None = None
        try:
            await asyncio.wait_for(workers_up(platform, worker_count), 120)
            if serves[0] is not None:
                disorder.serve.append(await serve_up(serves[0], serve_log, 0))
            started = time.perf_counter()
            run_ids = await load(platform, model, conversations)
            if chaos.kill:
                await stored_turns(platform, conversations * steps // 3)
                held = await holding(platform, workers[0].pid)
                disorder.held["kill"] = len(held)
                workers[0].send_signal(signal.SIGKILL)
                watches.append(
                    asyncio.create_task(watch_takeovers(platform, held, disorder, "kill"))
                )
                if serves[0] is not None:
                    serves[0].send_signal(signal.SIGKILL)
                await asyncio.to_thread(workers[0].wait)
                # Beside what follows: a slow start must not push the pause past the runs.
                aftermath = asyncio.create_task(after_the_kill(chaos, serves, data_dir, disorder))
            if chaos.pause_seconds:
                await stored_turns(platform, conversations * steps // 2)
                paused, held = await busiest(platform, workers[1:])
                disorder.held["pause"] = len(held)
                paused.send_signal(signal.SIGSTOP)
                watches.append(
                    asyncio.create_task(watch_takeovers(platform, held, disorder, "pause"))
                )
                try:
                    if chaos.cli_during:
                        await cli_command(data_dir, disorder)
                    await asyncio.sleep(chaos.pause_seconds)
                finally:
                    paused.send_signal(signal.SIGCONT)
            if chaos.terminate:
                await stored_turns(platform, conversations * steps * 2 // 3)
                print(f"terminated {await terminate_backends(database_url)} connections")
            if aftermath is not None:
                await aftermath
            try:
                await asyncio.wait_for(settled(platform, run_ids), wait_seconds)
            except TimeoutError:
                print(f"{name}: stopped waiting after {wait_seconds:.0f} s", file=sys.stderr)
            took = time.perf_counter() - started
            for watch in watches:
                watch.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            said = await asyncio.to_thread(worker_logs, folder, name)
            disorder.outages = said.count("met a database outage")
            disorder.released = said.count("left running with no job")
            disorder.refused_connections = refusals(server) - refused_before
            tally = await riding_out(lambda: count(platform, run_ids, steps))
            disorder.unsettled = conversations - tally.finished
            return conversations * steps / took, tally, disorder
        finally:
            if aftermath is not None:
                aftermath.cancel()
                await asyncio.gather(aftermath, return_exceptions=True)
            for worker in [*workers, *(serve for serve in serves if serve is not None)]:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGCONT)
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()


async def settled(platform: corral.Platform, run_ids: list[str]) -> None:
    """Return once every run ended. Read here rather than with ``wait_run``: this process
    must ride out the connection refusals the workers' pressure causes, and report them."""
    r = rt.Run
    ended = ("finished", "partial", "failed", "stopped")
    waiting = set(run_ids)
    while waiting:
        found = await rows_of(
            platform, select(r.id).where(r.id.in_(list(waiting)), r.status.in_(ended))
        )
        waiting -= {run_id for (run_id,) in found}
        await asyncio.sleep(0.25)


async def after_the_kill(
    chaos: Chaos, serves: list[subprocess.Popen[bytes] | None], data_dir: Path, into: Disorder
) -> None:
    """Start the killed `corral serve` again (``serves[0]`` becomes the new one) and run the
    CLI command, while the killed worker's runs are taken over."""
    killed = serves[0]
    if killed is not None:
        await asyncio.to_thread(killed.wait)
        log = data_dir.parent / f"{data_dir.name}-serve.log"
        seen = log.stat().st_size
        serves[0] = start_serve(data_dir, log)
        into.serve.append(await serve_up(serves[0], log, seen))
    if chaos.cli_during:
        await cli_command(data_dir, into)


async def busiest(
    platform: corral.Platform, candidates: list[subprocess.Popen[bytes]]
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """The worker of ``candidates`` that holds the most runs, once one holds any (within
    30 s), and the runs it holds."""
    deadline = time.perf_counter() + 30
    while True:
        held = [(await runs_held_by(platform, worker.pid), worker) for worker in candidates]
        most, worker = max(held, key=lambda pair: len(pair[0]))
        if most or time.perf_counter() > deadline:
            return worker, most
        await asyncio.sleep(0.1)


async def holding(platform: corral.Platform, pid: int) -> dict[str, str]:
    """The runs worker ``pid`` holds, once it holds any (under connection pressure a worker
    may have handed every run back for a moment; a kill or pause then would test nothing);
    after 30 s whatever it holds, maybe none."""
    deadline = time.perf_counter() + 30
    while True:
        held = await runs_held_by(platform, pid)
        if held or time.perf_counter() > deadline:
            return held
        await asyncio.sleep(0.1)


async def runs_held_by(platform: corral.Platform, pid: int) -> dict[str, str]:
    """The running runs the worker process ``pid`` advances: run id -> its worker id."""
    r = rt.Run
    running = await rows_of(platform, select(r.id, r.worker).where(r.status == "running"))
    return {
        run_id: worker
        for run_id, worker in running
        if worker is not None and worker.split(":")[1] == str(pid)
    }


async def watch_takeovers(
    platform: corral.Platform, held: dict[str, str], into: Disorder, event: str
) -> None:
    """Time until each run in ``held`` is claimed by another worker (the run row is all
    another process shows); a run that ends first was not taken over."""
    since = time.perf_counter()  # the task starts at the caller's next await, the signal's
    r = rt.Run
    waiting = dict(held)
    while waiting:
        now = await rows_of(
            platform, select(r.id, r.worker, r.status).where(r.id.in_(list(waiting)))
        )
        for run_id, worker, status in now:
            if worker not in (waiting[run_id], None):
                into.takeovers.setdefault(event, []).append(time.perf_counter() - since)
                del waiting[run_id]
            elif status != "running":
                into.kept += 1
                del waiting[run_id]
        await asyncio.sleep(0.1)


async def cli_command(data_dir: Path, into: Disorder) -> None:
    """``corral approvals list`` on the cluster's data folder, as an operator would."""
    began = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "corral", "--data-dir", str(data_dir), "approvals", "list"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=child_env(),
    )
    output, _ = await process.communicate()
    took = time.perf_counter() - began
    into.cli.append(f"exit {process.returncode} in {took:.1f} s")
    if process.returncode != 0:
        into.cli_failed += 1
        print(f"corral approvals list failed:\n{output.decode(errors='replace')}", file=sys.stderr)


def refusals(server: str) -> int:
    """How many connections the PostgreSQL server refused for want of slots so far."""
    log = Path(server) / "log"
    return log.read_text(errors="replace").count("too many clients") if log.exists() else 0


def keep_logs(folder: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for log in folder.glob("*.log"):
        shutil.copy(log, into / log.name)


def worker_logs(folder: Path, name: str) -> str:
    return "\n".join(log.read_text() for log in folder.glob(f"{name}-worker-*.log"))


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
        if int(await read(platform, lambda s: s.scalar(query)) or 0) >= at_least:
            return
        await asyncio.sleep(0.05)


def exact(name: str, tally: Tally) -> Figure:
    return Figure(
        name=f"{name}: rows exact",
        value=1.0 if tally.exact else 0.0,
        unit="bool",
        target="= 1",
        met=tally.exact,
    )


def chaos_figures(conversations: int, tally: Tally, disorder: Disorder) -> list[Figure]:
    took = [t for times in disorder.takeovers.values() for t in times] or [0.0]
    return [
        Figure(
            name="kill: runs finished",
            value=float(tally.finished),
            unit="runs",
            target=f"= {conversations}",
            met=tally.finished == conversations,
        ),
        Figure(
            name="kill: steps doubled",
            value=float(tally.doubled),
            unit="calls",
            target="= 0",
            met=tally.doubled == 0,
        ),
        Figure(
            name="kill: steps lost",
            value=float(tally.lost),
            unit="calls",
            target="= 0",
            met=tally.lost == 0,
        ),
        *(
            figure
            for event, n in disorder.held.items()
            for figure in (
                Figure(name=f"kill: runs held at the {event}", value=float(n), unit="runs"),
                Figure(
                    name=f"kill: runs taken over after the {event}",
                    value=float(len(disorder.takeovers.get(event, []))),
                    unit="runs",
                ),
            )
        ),
        Figure(name="kill: takeover min", value=min(took), unit="s"),
        Figure(name="kill: takeover median", value=statistics.median(took), unit="s"),
        Figure(name="kill: takeover max", value=max(took), unit="s"),
        Figure(name="kill: held runs not taken over", value=float(disorder.kept), unit="runs"),
        Figure(
            name="kill: connections refused (too many clients)",
            value=float(disorder.refused_connections),
            unit="count",
        ),
        Figure(name="kill: runs handed back (outage)", value=float(disorder.outages), unit="runs"),
        Figure(name="kill: runs released by sweep", value=float(disorder.released), unit="runs"),
        Figure(
            name="kill: serve starts failed",
            value=float(sum(not said.startswith("up") for said in disorder.serve)),
            unit="count",
            target="= 0",
            met=all(said.startswith("up") for said in disorder.serve),
        ),
        Figure(
            name="kill: CLI commands failed",
            value=float(disorder.cli_failed),
            unit="count",
            target="= 0",
            met=disorder.cli_failed == 0,
        ),
    ]


async def embedded_pass(folder: Path, model: str, conversations: int, steps: int) -> list[Figure]:
    base, tally = await embedded(folder, model, conversations, steps)
    for problem in tally.problems:
        print(f"embedded: {problem}", file=sys.stderr)
    return [Figure(name="embedded steps/s", value=base, unit="steps/s"), exact("embedded", tally)]


async def main(options: argparse.Namespace) -> None:
    sys.path.insert(0, str(REPO))
    from tests.postgres import throwaway_server

    conversations, steps, worker_count = options.conversations, options.steps, options.workers
    chaos = Chaos(
        kill=True,
        terminate=options.terminate_backends,
        pause_seconds=options.pause_worker,
        cli_during=options.cli_during,
        serve=options.kill_serve,
    )
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="corral-bench-cluster-") as tmp:
        folder = Path(tmp)
        model = script(folder, steps)
        try:
            with throwaway_server() as server:
                shape = (conversations, steps, worker_count, options.concurrency)
                base = None
                if not options.chaos_only:
                    figures += await embedded_pass(folder, model, conversations, steps)
                    base = figures[0].value
                    plain, plain_tally, _ = await cluster(
                        folder, server, model, *shape, Chaos(), options.wait
                    )
                    for problem in plain_tally.problems:
                        print(f"cluster: {problem}", file=sys.stderr)
                    figures.append(
                        Figure(
                            name=f"cluster steps/s ({worker_count} workers)",
                            value=plain,
                            unit="steps/s",
                            baseline=base,
                        )
                    )
                    figures.append(exact("cluster", plain_tally))
                try:
                    killed, tally, disorder = await cluster(
                        folder, server, model, *shape, chaos, options.wait
                    )
                finally:
                    if options.keep_logs is not None:
                        await asyncio.to_thread(keep_logs, folder, options.keep_logs)
        except FileNotFoundError as missing:
            skip("cluster", str(missing))
    for problem in tally.problems:
        print(f"kill: {problem}", file=sys.stderr)
    if disorder.serve:
        print("corral serve started: " + "; ".join(disorder.serve))
    if disorder.cli:
        print("corral approvals list during the chaos: " + "; ".join(disorder.cli))
    for event, times in disorder.takeovers.items():
        print(f"takeovers after the {event} (s): " + ", ".join(f"{t:.2f}" for t in sorted(times)))
    figures += [
        Figure(
            name="cluster steps/s, chaos (kill" + (", pause" if chaos.pause_seconds else "") + ")",
            value=killed,
            unit="steps/s",
            baseline=base,
        ),
        exact("kill", tally),
        *chaos_figures(conversations, tally, disorder),
    ]
    finish("cluster", figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32, help="worker_concurrency")
    parser.add_argument("--terminate-backends", action="store_true")
    parser.add_argument(
        "--pause-worker",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="SIGSTOP a worker (on another hostname) this long once half the steps are stored",
    )
    parser.add_argument(
        "--cli-during",
        action="store_true",
        help="run `corral approvals list` after the kill and during the pause",
    )
    parser.add_argument(
        "--kill-serve",
        action="store_true",
        help="run `corral serve` beside the workers, SIGKILL it with the worker, start it again",
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="FOLDER",
        help="copy the workers' and serve's logs of the kill pass there",
    )
    parser.add_argument(
        "--chaos-only", action="store_true", help="skip the embedded and the plain cluster pass"
    )
    parser.add_argument(
        "--wait", type=float, default=900.0, help="seconds a pass waits for its runs at most"
    )
    # SIGTERM (a `timeout`) unwinds like Ctrl-C, so the workers and the server are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    options = parser.parse_args()
    this_checkout()
    asyncio.run(main(options))
