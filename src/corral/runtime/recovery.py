"""Start-up recovery: runs whose process died become partial; parked runs stay answerable.

Every run records the worker advancing it as ``host:pid:start`` (``start`` is the process
start time from ``/proc``, so a reused pid is not mistaken for the old process). At start-up
a ``running`` or ``queued`` run whose worker on this host is gone is ended ``partial``
(reason ``restart``) with its transcript kept to the cut; its approvals are closed and its
conversation is freed. Runs of workers on other hosts are left alone: that host recovers
its own. A ``parked`` run holds nothing and needs nothing.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select

from corral.runtime.endings import Outcome, end_run
from corral.runtime.runs import TERMINAL
from corral.store import runtime_tables as rt_tables

if TYPE_CHECKING:
    from corral.runtime.runtime import Runtime

__all__ = ["process_start", "recover", "worker_alive", "worker_id"]


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def worker_id() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{process_start(pid) or '-'}"


def worker_alive(worker: str | None) -> bool:
    """False only when ``worker`` ran on this host and that process is gone."""
    if not worker:
        return False
    host, _, rest = worker.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if start and start != "-":
        return process_start(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def recover(rt: Runtime) -> list[str]:
    """End the runs left behind by dead processes; returns their ids."""
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


async def _free_conversations(rt: Runtime) -> None:
    """Free conversations still claimed by a run that already ended (a crash between)."""
    c, r = rt_tables.Conversation, rt_tables.Run
    async with rt.platform.sessions.begin() as session:
        stuck = list(
            await session.scalars(
                select(c).join(r, r.id == c.active_run_id).where(r.status.in_(list(TERMINAL)))
            )
        )
        for conversation in stuck:
            conversation.active_run_id = None
