"""A cluster for the tests: a database on the session's PostgreSQL server, a data folder
whose settings choose the procrastinate runner, and real `corral worker` processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import text

import corral
from corral.runtime.host import RunHost
from corral.runtime.runs import RunRecord
from tests.conftest import DEMO
from tests.postgres import new_database

T = TypeVar("T")
CLUSTERKIT = Path(__file__).parent / "fixtures" / "clusterkit"
_SESSIONS = """
    SELECT pid, state, wait_event_type, wait_event, now() - xact_start, left(query, 120)
      FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
"""
_JOBS = "SELECT id, status, task_name, lock, worker_id, attempts FROM procrastinate_jobs"
HEARTBEAT_SECONDS = 0.5
STALLED_SECONDS = 4.0


class Cluster:
    """One data folder and database shared by the test process and its workers."""

    def __init__(self, root: Path, database_url: str) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.data_dir.mkdir(parents=True)
        self.database_url = database_url
        self.workers: list[subprocess.Popen[bytes]] = []
        settings = {
            "database_url": database_url,
            "run_jobs": "cluster",
            "package_paths": [str(CLUSTERKIT), str(DEMO)],
            "worker_heartbeat_seconds": HEARTBEAT_SECONDS,
            "worker_stalled_seconds": STALLED_SECONDS,
            "cluster_sweep_seconds": 1,
            "worker_shutdown_grace_seconds": 0.5,
        }
        lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        (self.data_dir / "corral.toml").write_text("\n".join(lines) + "\n")
        self._scripts = 0

    def start_worker(
        self, concurrency: int = 4, *, hostname: str | None = None
    ) -> subprocess.Popen[bytes]:
        """A `corral worker` process on this cluster; its output goes to a log file. With
        ``hostname`` it runs in a UTS namespace of its own under that name: a worker on
        another machine, whose liveness this host cannot see."""
        log = (self.root / f"worker-{len(self.workers)}.log").open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        # unshare and sh exec in place: the worker keeps the pid Popen knows.
        elsewhere = (
            ["unshare", "--uts", "--", "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh"]
            if hostname is not None
            else []
        )
        process = subprocess.Popen(
            [
                *elsewhere,
                *([hostname] if hostname is not None else []),
                *(sys.executable, "-m", "corral", "--data-dir", str(self.data_dir)),
                *("worker", "--concurrency", str(concurrency)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        self.workers.append(process)
        return process

    def ensure_workers(self, count: int, concurrency: int = 4) -> None:
        """Have ``count`` live workers (start the missing ones)."""
        alive = [p for p in self.workers if p.poll() is None]
        for _ in range(count - len(alive)):
            self.start_worker(concurrency)

    def worker_of(self, worker_id: str | None) -> subprocess.Popen[bytes]:
        """The worker process whose Corral worker id (``host:pid:start``) is given."""
        pid = int(str(worker_id).split(":")[1])
        return next(p for p in self.workers if p.pid == pid)

    def stop_worker(self, process: subprocess.Popen[bytes]) -> None:
        """SIGTERM, as an operator stops a worker, and wait for it to leave."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.workers:
            self.stop_worker(process)

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.root.glob("worker-*.log")))

    def script(self, *turns: Any, **options: Any) -> str:
        """A model script the workers read; its ``script:PATH`` model string."""
        self._scripts += 1
        path = self.root / f"script-{self._scripts}.json"
        path.write_text(json.dumps({"turns": list(turns), **options}))
        return f"script:{path}"

    async def settled(self, rt: RunHost, run_id: str, within: float) -> RunRecord:
        """``rt.wait_run(run_id)``; on a timeout, an AssertionError carrying what explains
        one: the workers' logs, the engine's jobs and every session's wait on the server."""
        try:
            return await asyncio.wait_for(rt.wait_run(run_id), within)
        except TimeoutError:
            async with rt.kernel.sessions() as session:
                sessions = list(await session.execute(text(_SESSIONS)))
                jobs = list(await session.execute(text(_JOBS)))
            raise AssertionError(
                f"run {run_id} did not settle within {within} s\nsessions: {sessions}\n"
                f"jobs: {jobs}\nlogs:\n{self.logs()}"
            ) from None

    def fifo(self, name: str) -> Path:
        path = self.root / name
        os.mkfifo(path)
        return path


@pytest.fixture
def own_cluster(postgres: str, tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of one test's own (its own database): no other test's worker takes its jobs."""
    made = Cluster(tmp_path, new_database(postgres))
    asyncio.run(_migrate(made.data_dir))
    try:
        yield made
    finally:
        for process in made.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a test may leave one stopped
                process.kill()
                process.wait()


@pytest.fixture(scope="session")
def cluster(postgres: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for every test here: workers start once and are shared where a test
    allows (:meth:`Cluster.ensure_workers`)."""
    made = Cluster(tmp_path_factory.mktemp("cluster"), new_database(postgres))
    # Migrated once here, before any worker starts: workers then find the schema ready.
    asyncio.run(_migrate(made.data_dir))
    try:
        yield made
    finally:
        for process in made.workers:
            if process.poll() is None:
                process.kill()
                process.wait()


async def _migrate(data_dir: Path) -> None:
    async with corral.open(data_dir):
        pass


async def read_started(fifo: Path, within: float = 60.0) -> str:
    """Wait until a clusterkit call in a worker writes to ``fifo`` (it started)."""

    def read() -> str:
        with fifo.open() as pipe:
            return pipe.read()

    reader = asyncio.ensure_future(asyncio.to_thread(read))
    try:
        return await asyncio.wait_for(asyncio.shield(reader), within)
    except TimeoutError:
        # Unblock the reading thread (a writer that opens and closes), then fail.
        with fifo.open("w"):
            pass
        await reader
        raise AssertionError(f"no call wrote to {fifo} within {within} s") from None


async def eventually(check: Callable[[], Awaitable[T | None]], within: float = 60.0) -> T:
    """Poll ``check`` until it returns something: state other processes write has no event
    this process could wait on (the runtime's own ``wait_run`` reads the store likewise)."""
    async with asyncio.timeout(within):
        while True:
            found = await check()
            if found is not None:
                return found
            await asyncio.sleep(0.1)


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    """A tool call in a model script."""
    return {"name": tool, "args": args}
