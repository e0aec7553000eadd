"""LocalJobs: bounded concurrency, waiting for jobs, and what runs once a job has left."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from corral.runtime.jobs import JobRunner, LocalJobs


class Steered:
    """A job function the test steers: each run's job waits at its own gate."""

    def __init__(self) -> None:
        self.started: dict[str, asyncio.Event] = {}
        self.gates: dict[str, asyncio.Event] = {}
        self.during: dict[str, Callable[[str], Awaitable[None]]] = {}

    def begun(self, run_id: str) -> asyncio.Event:
        """Set when the job of ``run_id`` begins."""
        return self.started.setdefault(run_id, asyncio.Event())

    def gate(self, run_id: str) -> asyncio.Event:
        """What the job of ``run_id`` waits for before it returns."""
        return self.gates.setdefault(run_id, asyncio.Event())

    async def __call__(self, run_id: str) -> None:
        self.begun(run_id).set()
        if run_id in self.during:
            await self.during[run_id](run_id)
        await self.gate(run_id).wait()


def limit(n: int) -> Callable[[], Awaitable[int]]:
    async def read() -> int:
        return n

    return read


async def test_idle_and_wait_return_when_the_jobs_have_left() -> None:
    job = Steered()
    jobs: JobRunner = LocalJobs(job, limit(2))
    await jobs.idle()  # nothing submitted: idle at once
    await jobs.wait("a")
    jobs.submit("a")
    jobs.submit("b")
    assert jobs.pending == 2
    wait_a = asyncio.create_task(jobs.wait("a"))
    idle = asyncio.create_task(jobs.idle())
    await job.begun("a").wait()
    await job.begun("b").wait()
    assert not wait_a.done() and not idle.done()
    job.gate("a").set()
    await wait_a
    assert jobs.pending == 1 and not idle.done()
    job.gate("b").set()
    await idle
    assert jobs.pending == 0


async def test_at_most_limit_jobs_run_and_queued_ones_count_as_pending() -> None:
    job = Steered()
    jobs = LocalJobs(job, limit(1))
    jobs.submit("a")
    jobs.submit("b")
    await job.begun("a").wait()
    assert not job.begun("b").is_set() and jobs.pending == 2
    idle = asyncio.create_task(jobs.idle())
    job.gate("a").set()
    await job.begun("b").wait()
    assert jobs.pending == 1 and not idle.done()
    job.gate("b").set()
    await idle


async def test_after_job_waits_until_the_running_job_has_left() -> None:
    job = Steered()
    jobs = LocalJobs(job, limit(2))
    seen: list[tuple[str, int]] = []
    last = asyncio.Event()

    def note(what: str) -> Callable[[], Awaitable[None]]:
        async def then() -> None:
            seen.append((what, jobs.pending))
            last.set()

        return then

    await jobs.after_job("a", note("no job: at once"))
    assert seen == [("no job: at once", 0)]
    last.clear()

    async def settle(run_id: str) -> None:
        await jobs.after_job(run_id, note("first"))
        await jobs.after_job(run_id, note("second"))

    job.during["a"] = settle
    jobs.submit("a")
    await job.begun("a").wait()
    await jobs.after_job("a", note("from outside, while it runs"))
    assert len(seen) == 1  # all three wait for the job
    job.gate("a").set()
    await last.wait()
    assert seen[1:] == [("first", 0), ("second", 0), ("from outside, while it runs", 0)]


async def test_a_queued_job_does_not_hold_back_what_waits_for_its_run() -> None:
    # Stop of a run still queued behind the limit is announced at once.
    job = Steered()
    jobs = LocalJobs(job, limit(1))
    jobs.submit("busy")
    jobs.submit("queued")
    await job.begun("busy").wait()
    seen: list[int] = []

    async def then() -> None:
        seen.append(jobs.pending)

    await jobs.after_job("queued", then)
    assert seen == [2]
    job.gate("busy").set()
    job.gate("queued").set()
    await jobs.idle()


async def test_what_runs_after_a_job_keeps_its_order_when_it_submits_again() -> None:
    job = Steered()
    jobs = LocalJobs(job, limit(2))
    seen: list[str] = []
    resubmitted = asyncio.Event()

    async def parked() -> None:
        seen.append("parked")

    async def resubmit() -> None:
        seen.append("resubmitted")
        del job.started["a"], job.during["a"]
        jobs.submit("a")  # the run continues: a second job of the same run
        resubmitted.set()

    async def first_job(run_id: str) -> None:
        await jobs.after_job(run_id, parked)
        await jobs.after_job(run_id, resubmit)

    job.during["a"] = first_job
    job.gate("a").set()
    jobs.submit("a")
    await resubmitted.wait()
    assert seen == ["parked", "resubmitted"]
    await job.begun("a").wait()  # the second job's
    await jobs.idle()


async def test_a_failing_job_or_callback_is_logged_and_the_rest_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []
    announced = asyncio.Event()

    async def broken() -> None:
        raise RuntimeError("cannot announce")

    async def then() -> None:
        seen.append("announced")
        announced.set()

    async def job(run_id: str) -> None:
        await jobs.after_job(run_id, broken)
        await jobs.after_job(run_id, then)
        await _failing(run_id)

    jobs = LocalJobs(job, limit(1))
    jobs.submit("a")
    await announced.wait()
    assert seen == ["announced"] and jobs.pending == 0
    messages = [r.getMessage() for r in caplog.records]
    assert "advancing run a failed" in messages
    assert "what followed the job of run a failed" in messages


async def test_close_ends_running_jobs_and_still_announces_them() -> None:
    seen: list[int] = []
    started = asyncio.Event()

    async def then() -> None:
        seen.append(jobs.pending)

    async def job(run_id: str) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await jobs.after_job(run_id, then)  # as a run ended "partial" at shutdown
            raise

    jobs = LocalJobs(job, limit(1))
    jobs.submit("a")
    await started.wait()
    await jobs.close(grace=0)
    assert seen == [0]
    jobs.submit("b")  # closed: taken no more
    assert jobs.pending == 0
    await jobs.idle()


async def _failing(run_id: str) -> None:
    raise RuntimeError(f"run {run_id} broke")
