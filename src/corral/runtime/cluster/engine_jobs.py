"""Runs advanced on procrastinate workers over PostgreSQL: :class:`ProcrastinateJobs`.

Submitting a run defers the task ``corral.advance_run(run_id)`` with the lock and queueing
lock ``run:<id>``: one job per run waits at a time, and jobs of one run never overlap, on
any worker. The task calls the runtime's job function; that function knows nothing of the
engine.

The run row is the outbox. A run's status becomes ``queued`` in the transaction that queues
it (PostgreSQL through asyncpg; procrastinate talks psycopg, so the two cannot share that
transaction); the job is deferred right after it commits. The periodic sweep defers a job
for any queued run that has none (the process died between the commit and the defer), so
no status change is ever without its job, and a job never exists before its run's row.

The sweep, a periodic task that runs on one worker per slot, also runs the runtime's ticks
(the workflow scheduler) and hands stalled jobs back: a worker that stopped sending heartbeats for
``worker_stalled_seconds`` is dead, its jobs are retried (procrastinate's stalled-job API),
and the job on the new worker takes the run over (:mod:`corral.runtime.takeover`). Then it
removes the dead workers' rows from ``procrastinate_workers`` and deletes waiting jobs of
runs that already ended.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from procrastinate import App, JobContext, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException, UniqueViolation
from procrastinate.jobs import Status
from procrastinate.types import TimeDeltaParams
from psycopg import AsyncConnection
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import ConfigError
from corral.runtime.jobs import AfterJob, Job, LocalJobs
from corral.store.outages import database_unavailable

__all__ = ["ADVANCE_TASK", "ClusterTiming", "ProcrastinateJobs", "psycopg_conninfo"]

log = logging.getLogger("corral.runtime")

ADVANCE_TASK = "corral.advance_run"
SWEEP_TASK = "corral.sweep"

STOP_WATCH_SECONDS = 0.25
"""How often a worker looks for Stop (and takeovers) of the runs it advances."""

_NEEDING_A_JOB = text(
    """
    SELECT r.id FROM runs r
     WHERE (r.status = 'queued' OR (r.status = 'running' AND r.worker IS NULL))
       AND NOT EXISTS (
           SELECT 1 FROM procrastinate_jobs j
            WHERE j.lock = 'run:' || r.id AND j.status IN ('todo', 'doing'))
    """
)


_RELEASE_LOST_RUNS = text(
    """
    UPDATE runs r SET worker = NULL, updated_at = now()
     WHERE r.status = 'running' AND r.worker IS NOT NULL
       AND NOT EXISTS (
           SELECT 1 FROM procrastinate_jobs j
            WHERE j.lock = 'run:' || r.id AND j.status IN ('todo', 'doing'))
    RETURNING r.id
    """
)
"""Runs still ``running`` that no job advances any more (their job ended ``failed`` or was
lost, say while the database was out of reach): released, keeping their lease, so that the
job deferred for them takes them over. A worker advances a run only inside its ``doing``
job, and settles the run before that job ends, so a running run without one is abandoned."""


_ENDED_RUNS_JOBS = text(
    """
    SELECT j.id FROM procrastinate_jobs j
      JOIN runs r ON j.lock = 'run:' || r.id
     WHERE j.status = 'todo' AND j.task_name = :task
       AND r.status IN ('finished', 'partial', 'failed', 'stopped')
    """
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Swept:
    """What one sweep did."""

    retried: int = 0
    """Jobs of workers whose heartbeats stopped, handed back to the queue."""
    deferred: int = 0
    """Queued (or handed-over) runs that had no job and got one."""
    pruned_workers: int = 0
    """Dead workers removed from ``procrastinate_workers``."""
    dropped: int = 0
    """Waiting jobs of runs that had already ended (they would do nothing)."""
    released: int = 0
    """Running runs whose job had failed or was lost, released to be taken over."""


def _forgotten(error: ConnectorException) -> bool:
    """Whether the engine failed because this worker's row was removed (taken for dead)."""
    cause = error.__cause__
    return cause is not None and "procrastinate_jobs_worker_id_fkey" in str(cause)


async def _pause(stopping: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds``, or less when a stop signal comes."""
    try:
        await asyncio.wait_for(stopping.wait(), seconds)
    except TimeoutError:
        pass


async def _autocommit(connection: AsyncConnection[Any]) -> None:
    await connection.set_autocommit(True)


def psycopg_conninfo(database_url: str) -> str:
    """The libpq URL of a ``postgresql+asyncpg://`` database URL (for procrastinate)."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ConfigError(
            f"run_jobs = 'cluster' needs PostgreSQL, not {url.get_backend_name()!r}: set "
            "database_url to postgresql+asyncpg://user@host/db (or run_jobs = 'local')"
        )
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterTiming:
    """How fast a cluster notices a dead worker (start-up settings)."""

    heartbeat_seconds: float = 0.5
    stalled_seconds: float = 3.0
    sweep_seconds: int = 1
    pool_size: int = 16
    shutdown_grace_seconds: float = 10.0
    """How long a stopping worker waits before it hands its runs over."""
    """Connections to the engine's database a process may open."""


class ProcrastinateJobs:
    """A :class:`~corral.runtime.jobs.JobRunner` whose jobs run on procrastinate workers.

    Every process defers; only a process in :meth:`work` (``corral worker``) executes jobs.
    Inside a worker the jobs are also counted in a :class:`LocalJobs`, so ``after_job``,
    ``wait`` and ``lending`` keep their meaning for the jobs this process runs.
    """

    def __init__(
        self,
        job: Job,
        *,
        database_url: str,
        sessions: async_sessionmaker[AsyncSession],
        timing: ClusterTiming,
        watch: Callable[[], Awaitable[None]],
        tick: Callable[[], Awaitable[None]],
    ) -> None:
        self._local = LocalJobs(job, self._no_limit)
        self._sessions = sessions
        self._timing = timing
        self._watch = watch
        self._tick = tick
        self._defers: set[asyncio.Task[None]] = set()
        self._closed = False
        connector = PsycopgConnector(
            conninfo=psycopg_conninfo(database_url),
            # Heartbeats, fetches, finishes and defers share the pool; a starved pool
            # delays heartbeats until live workers look dead.
            min_size=2,
            max_size=timing.pool_size,
            # Each engine query is one statement that commits itself. Committed from the
            # pool instead, a worker frozen (SIGSTOP, a paused VM) between a statement and
            # its commit would hold that statement's row locks, and the live workers' sweep,
            # waiting on them to retry its jobs, would never take its runs over.
            configure=_autocommit,
        )
        self.app = App(connector=connector)
        self._advance = self.app.task(name=ADVANCE_TASK, pass_context=True)(self._execute)
        sweep = self.app.task(name=SWEEP_TASK, pass_context=True)(self._sweep_task)
        self.app.periodic(cron=f"* * * * * */{timing.sweep_seconds}", periodic_id="sweep")(sweep)

    @staticmethod
    async def _no_limit() -> int:
        return 1 << 30  # the engine's worker concurrency bounds the jobs

    async def open(self) -> None:
        await self.app.open_async()

    # -- JobRunner --------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return self._local.pending + len(self._defers)

    @property
    def distributed(self) -> bool:
        return True

    def submit(self, run_id: str) -> None:
        task = asyncio.create_task(self.defer(run_id), name=f"corral-defer-{run_id}")
        self._defers.add(task)
        task.add_done_callback(self._defers.discard)

    def retry_later(self, run_id: str, seconds: float) -> None:
        task = asyncio.create_task(self.defer(run_id, seconds), name=f"corral-retry-{run_id}")
        self._defers.add(task)
        task.add_done_callback(self._defers.discard)

    async def defer(self, run_id: str, seconds: float = 0.0) -> None:
        """Defer the job of ``run_id`` (to start in ``seconds``) unless one already waits;
        failures are left to the sweep, which defers a job for every run that needs one."""
        lock = f"run:{run_id}"
        later: TimeDeltaParams | None = {"seconds": round(seconds)} if seconds > 0 else None
        try:
            await self._advance.configure(
                lock=lock, queueing_lock=lock, schedule_in=later
            ).defer_async(run_id=run_id)
        except AlreadyEnqueued:
            pass
        except Exception:
            log.exception("deferring the job of run %s failed; the sweep retries it", run_id)

    async def after_job(self, run_id: str, then: AfterJob) -> None:
        await self._local.after_job(run_id, then)

    async def wait(self, run_id: str) -> None:
        await self._local.wait(run_id)

    async def idle(self) -> None:
        await self._local.idle()

    def lending(self) -> AbstractAsyncContextManager[None]:
        return self._local.lending()

    async def worker_gone(self, run_id: str, worker: str | None) -> bool:
        # A job finds its run running under another worker only once that worker's job
        # stopped doing it: the job lock lets one job of a run do at a time, and a worker
        # advances a run only inside its job. So the other worker died, let go, or stopped
        # heartbeating long enough for its job to be handed back, which on this host too
        # means a pause (SIGSTOP, a frozen VM) whose process still lives. All are taken
        # over; a worker that was only paused finds its next write refused (the claim
        # bumps the lease) and lets go: see corral.runtime.cluster.watch.
        return True

    async def close(self) -> None:
        self._closed = True
        await self._local.close()
        if self._defers:
            await asyncio.gather(*list(self._defers), return_exceptions=True)
        await self.app.close_async()

    # -- the worker -------------------------------------------------------------------------

    async def work(self, concurrency: int, *, name: str = "corral") -> None:
        """Be a worker until SIGINT / SIGTERM: advance runs, heartbeat, sweep, watch Stop.

        On the signal it takes no more jobs, waits ``shutdown_grace_seconds`` for its runs
        and then cancels the rest, which hand themselves over (see takeover.hand_over)."""
        watcher = asyncio.create_task(self._watch_loop(), name="corral-stop-watch")
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        engine: asyncio.Future[None] | None = None

        def stop() -> None:
            # The engine's own handlers cannot tell a signal from a failed side task (its
            # listener loses the database): both end run_worker_async quietly.
            stopping.set()
            if engine is not None:
                engine.cancel()  # a graceful stop, as the engine's signal handler does

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop)
        try:
            while not stopping.is_set():
                engine = asyncio.ensure_future(
                    self.app.run_worker_async(
                        concurrency=concurrency,
                        name=name,
                        update_heartbeat_interval=self._timing.heartbeat_seconds,
                        stalled_worker_timeout=self._timing.stalled_seconds,
                        delete_jobs="successful",
                        shutdown_graceful_timeout=self._timing.shutdown_grace_seconds,
                        install_signal_handlers=False,
                    )
                )
                try:
                    await engine
                except asyncio.CancelledError:
                    if stopping.is_set():
                        return
                    raise
                except ConnectorException as exc:
                    if database_unavailable(exc):
                        log.warning("this worker lost its database (%s); it starts again", exc)
                    elif _forgotten(exc):
                        # Paused past worker_stalled_seconds: its runs were taken over (and
                        # its writes are fenced), its row removed. It starts afresh.
                        log.warning(
                            "this worker was taken for dead (no heartbeat for %s s) and "
                            "removed from the cluster; it registers again",
                            self._timing.stalled_seconds,
                        )
                        continue
                    else:
                        raise
                if stopping.is_set():
                    return
                # Stopped on its own: its database failed. Its runs come back through
                # the sweep (theirs or another worker's) once the database does.
                log.warning("this worker's engine stopped on a database failure; it starts again")
                await _pause(stopping, self._timing.stalled_seconds)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _watch_loop(self) -> None:
        while True:
            try:
                await self._watch()
            except Exception:
                log.exception("watching the runs of this worker failed")
            await asyncio.sleep(STOP_WATCH_SECONDS)

    async def _execute(self, context: JobContext, run_id: str) -> None:
        await self._local.execute(run_id)

    async def _sweep_task(self, context: JobContext, timestamp: int) -> None:
        # One worker per slot: the engine defers each periodic timestamp once.
        await self.sweep()
        await self._tick()

    async def sweep(self) -> Swept:
        """Retry the jobs of dead workers, release running runs no job advances, defer
        jobs for runs without one, forget dead workers and drop waiting jobs of runs that
        already ended."""
        manager = self.app.job_manager
        stalled = list(
            await manager.get_stalled_jobs(seconds_since_heartbeat=self._timing.stalled_seconds)
        )
        for job in stalled:
            log.warning("retrying job %s %s: its worker is gone", job.id, job.task_kwargs)
            try:
                await manager.retry_job(job)
            except UniqueViolation:
                # Another job of the run already waits (a defer raced the relay): that one
                # takes the run over once this one is out of the way.
                assert job.id is not None
                await manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=False)
            except Exception:
                log.exception("retrying job %s failed; the next sweep tries again", job.id)
        # After the retries: a dead worker's jobs are found through its row.
        pruned = await manager.prune_stalled_workers(self._timing.stalled_seconds)
        async with self._sessions.begin() as session:
            released = list(await session.scalars(_RELEASE_LOST_RUNS))
        for run_id in released:
            log.warning("run %s was left running with no job (failed or lost); requeued", run_id)
        async with self._sessions() as session:
            orphans = list(await session.scalars(_NEEDING_A_JOB))
            ended = list(await session.scalars(_ENDED_RUNS_JOBS, {"task": ADVANCE_TASK}))
        for run_id in orphans:
            await self.defer(run_id)
        for job_id in ended:
            await manager.cancel_job_by_id_async(job_id, delete_job=True)
        return Swept(
            retried=len(stalled),
            deferred=len(orphans),
            pruned_workers=len(pruned),
            dropped=len(ended),
            released=len(released),
        )
