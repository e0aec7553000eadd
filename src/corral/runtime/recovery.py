"""Start-up recovery: runs whose process died become partial; parked runs stay answerable.

Every run records the worker advancing it as ``host:pid:start`` (``start`` is the process
start time from ``/proc``, so a reused pid is not mistaken for the old process). At start-up
a ``running`` or ``queued`` run whose worker on this host is gone is ended ``partial``
(reason ``restart``) with its transcript kept to the cut; its approvals are closed and its
conversation is freed. Runs of workers on other hosts are left alone: that host recovers
its own. A ``parked`` run holds nothing and needs nothing.

On a database set up for a cluster (PostgreSQL with ``run_jobs`` ``auto`` or ``cluster``)
no process recovers anything at start-up, a CLI command least of all: a queued run waits
for a worker, and a run whose worker died is taken over by the cluster's sweep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from corral.runtime.endings import Outcome, end_run
from corral.runtime.rewinds import REWIND_HOLDER
from corral.runtime.runs import TERMINAL
from corral.runtime.workers import worker_alive
from corral.store import runtime_tables as rt_tables

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["recover"]


async def recover(rt: RunHost) -> list[str]:
    """End the runs left behind by dead processes; returns their ids.

    Not on a cluster: there the engine notices dead workers and their runs are taken over
    from their last persisted step (see :mod:`corral.runtime.takeover`)."""
    if rt.jobs.distributed or rt.kernel.settings.hosted_run_jobs == "cluster":
        return []
    ended: list[str] = []
    for run in await rt.runs.list_runs(statuses=["running", "queued"], limit=100_000):
        if run.worker == rt.worker or worker_alive(run.worker):
            continue
        outcome = Outcome(
            status="partial",
            reason="restart",
            detail=f"the platform restarted while the run was {run.status}; the transcript "
            "is kept up to the cut",
        )
        steps = len(
            [
                r
                for r in await rt.conversations.rows(run.conversation_id, run_id=run.id)
                if r.kind == "model_turn"
            ]
        )
        if await end_run(rt, run, outcome, from_statuses=[run.status], steps=steps, wake=False):
            ended.append(run.id)
    await _free_conversations(rt)
    return ended


async def _free_conversations(rt: RunHost) -> None:
    """Free conversations still claimed by a run that already ended (a crash between), or
    by a rewind of a process that is gone."""
    c, r = rt_tables.Conversation, rt_tables.Run
    async with rt.kernel.sessions.begin() as session:
        stuck = list(
            await session.scalars(
                select(c).join(r, r.id == c.active_run_id).where(r.status.in_(list(TERMINAL)))
            )
        )
        held = await session.scalars(select(c).where(c.active_run_id.like(f"{REWIND_HOLDER}%")))
        gone = [h for h in held if not worker_alive(str(h.active_run_id)[len(REWIND_HOLDER) :])]
        stuck += gone
        for conversation in stuck:
            conversation.active_run_id = None
