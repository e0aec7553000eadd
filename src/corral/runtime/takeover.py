"""Taking over a run whose worker died, from its last persisted step.

On a cluster a worker can die in the middle of a run (SIGKILL, a lost machine). The engine
notices (heartbeats) and gives the run's job to another worker; :func:`take_over` lets that
job claim the run by a compare-and-set on the run's ``worker`` field, so two workers never
both think they advance it. The run then continues from what the store holds: the model
turns and tool results persisted before the death count, nothing is replayed.

A tool call that had started but has no persisted result is never silently run again: the
model gets an ``interrupted`` result saying it may have partly happened
(:func:`settle_interrupted`). A call to a tool whose annotations say it is idempotent is
run again instead. A call that had parked on a wait (its ``waiting`` card is stored) is
still waiting: the run parks on it again.

A worker thought dead may only have paused (SIGSTOP, a frozen VM). Every claim bumps the
run's lease, and the claiming worker's writes of the run (its rows through
:meth:`~corral.runtime.host.RunHost.append`, its parking and ending) check that lease in the
same statement; a refused row raises :class:`~corral.runtime.appends.Fenced` and the stale
worker lets the run go without writing anything more.

A run whose job meets a database outage (connections lost, "too many clients") did nothing
wrong: :func:`hand_back` lets it go, lease kept, and its job is deferred again after a pause;
when even that cannot be written, the cluster's sweep releases the run, which no job then
advances.

Nothing here knows the engine: the runner says whether the old worker is gone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_ai.messages import ToolCallPart
from sqlalchemy import func, select, update

from corral.errors import ToolError
from corral.runtime.runs import RunRecord, Wait
from corral.runtime.timeline import NewRow
from corral.store import runtime_tables as rt_tables
from corral.store.outages import database_unavailable
from corral.store.tables import utcnow
from corral.tools.results import ToolResult

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = [
    "TAKEN_OVER",
    "Unfinished",
    "hand_back",
    "hand_over",
    "interrupted_result",
    "interrupted_rows",
    "take_over",
    "taken_over_line",
    "unfinished_calls",
]

log = logging.getLogger("corral.runtime")

OUTAGE_RETRY_SECONDS = 2.0
"""How long a run handed back after a database outage waits before its job runs again."""

TAKEN_OVER = "taken_over"
"""The cancellation reason of a run another worker took over: this one lets go silently."""


async def take_over(rt: RunHost, run: RunRecord) -> bool:
    """Claim a ``running`` run whose worker is gone; False when it is not ours to take.

    The claim bumps the run's lease: the old worker's writes, which check the lease it
    claimed in the same statement, are refused from now on (it may only have paused). The
    claim also stores the Steps counter as the persisted model turns count it (the
    dead worker stored it only when a run parked or ended).
    """
    if run.status != "running" or run.worker == rt.worker:
        return False
    if not await rt.jobs.worker_gone(run.id, run.worker):
        return False
    r, row = rt_tables.Run, rt_tables.ConversationRow
    async with rt.kernel.sessions.begin() as session:
        steps = await session.scalar(
            select(func.count()).where(row.run_id == run.id, row.kind == "model_turn")
        )
        claimed = await session.execute(
            update(r)
            .where(
                r.id == run.id,
                r.status == "running",
                r.worker == run.worker,
                r.lease == run.lease,
            )
            .values(
                worker=rt.worker, lease=run.lease + 1, steps=int(steps or 0), updated_at=utcnow()
            )
        )
    return int(getattr(claimed, "rowcount", 0)) == 1


def taken_over_line(run_id: str, previous: str | None) -> str:
    """What the log says of a run this worker just claimed from ``previous`` (None: a worker
    released it, handing it back after a database outage or over as it shut down)."""
    if previous is None:
        return (
            f"run {run_id} resumed from its last persisted step: its previous worker released "
            "it (after a database outage, or as it shut down)"
        )
    return f"run {run_id} taken over from worker {previous}"


async def hand_over(rt: RunHost, run: RunRecord) -> bool:
    """Let go of a running run as this worker shuts down, and queue a job for it: the next
    worker takes it over from its last persisted step. False when it is no longer ours."""
    r = rt_tables.Run
    async with rt.kernel.sessions.begin() as session:
        released = await session.execute(
            update(r)
            .where(r.id == run.id, r.status == "running", r.worker == rt.worker)
            .values(worker=None, updated_at=utcnow())
        )
    if int(getattr(released, "rowcount", 0)) != 1:
        return False
    rt.jobs.submit(run.id)
    return True


async def hand_back(rt: RunHost, run: RunRecord, held_lease: int | None) -> bool:
    """Let go of a running run whose job met a database outage, keeping its lease, and
    defer its job again after :data:`OUTAGE_RETRY_SECONDS`: the next job takes it over from
    its last persisted step. Still unreachable, the run is left to the cluster's sweep.

    False when the run was handed back ``cluster_outage_retries`` times already: it is
    still this worker's, and the caller ends it failed."""
    r = rt_tables.Run
    ours = [r.id == run.id, r.status == "running", r.worker == rt.worker]
    if held_lease is not None:
        ours.append(r.lease == held_lease)
    try:
        async with rt.kernel.sessions.begin() as session:
            retries = await session.scalar(select(r.outage_retries).where(*ours))
            if retries is None:
                return True  # not ours any more
            if retries >= rt.kernel.settings.cluster_outage_retries:
                return False
            released = await session.execute(
                update(r)
                .where(*ours)
                .values(worker=None, outage_retries=retries + 1, updated_at=utcnow())
            )
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        log.warning("run %s: the database is still out of reach; the sweep requeues it", run.id)
        return True
    if int(getattr(released, "rowcount", 0)) == 1:
        rt.jobs.retry_later(run.id, OUTAGE_RETRY_SECONDS)
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Unfinished:
    """The calls of a taken-over run's last turn that have no result yet."""

    rerun: tuple[ToolCallPart, ...] = ()
    """Calls to idempotent tools: run again."""
    interrupted: tuple[tuple[str, str], ...] = ()
    """``(call_id, tool)`` of the calls answered ``interrupted``."""
    waits: tuple[Wait, ...] = ()
    """Calls that had parked on a wait before the worker died."""
    answered: bool = False
    """The last stored model turn called no tool: the run had its final answer and only
    its ending was lost; it ends finished without asking the model again."""


async def unfinished_calls(rt: RunHost, run_id: str) -> Unfinished:
    """Sort the run's calls without a stored result by what a takeover does with them."""
    row = rt_tables.ConversationRow
    async with rt.kernel.sessions() as session:
        stored = list(
            await session.execute(
                select(row.kind, row.call_id, row.data)
                .where(
                    row.run_id == run_id,
                    row.kind.in_(["model_turn", "tool_call", "tool_result", "card"]),
                )
                .order_by(row.seq)
            )
        )
    turns = [i for i, (kind, _, _) in enumerate(stored) if kind == "model_turn"]
    final = bool(turns) and not any(kind == "tool_call" for kind, _, _ in stored[turns[-1] :])
    rows = [(kind, call, data) for kind, call, data in stored if call is not None]
    answered = {call for kind, call, _ in rows if kind == "tool_result"}
    waiting = {
        call: data["wait"]
        for kind, call, data in rows
        if kind == "card" and isinstance(data, dict) and data.get("card") == "waiting"
    }
    rerun: list[ToolCallPart] = []
    interrupted: list[tuple[str, str]] = []
    waits: list[Wait] = []
    for kind, call_id, data in rows:
        if kind != "tool_call" or call_id in answered or not isinstance(data, dict):
            continue
        tool = str(data.get("tool", ""))
        if call_id in waiting:
            wait = waiting[call_id]
            waits.append(Wait(kind=wait["kind"], id=wait["id"], call_id=call_id, tool=tool))
        elif _idempotent(rt, tool):
            rerun.append(ToolCallPart(tool, dict(data.get("args") or {}), tool_call_id=call_id))
        else:
            interrupted.append((call_id, tool))
    return Unfinished(
        rerun=tuple(rerun), interrupted=tuple(interrupted), waits=tuple(waits), answered=final
    )


def _idempotent(rt: RunHost, tool: str) -> bool:
    loaded = rt.kernel.registry.tools.get(tool)
    return loaded is not None and loaded.spec.annotations.idempotent


def interrupted_result(tool: str) -> ToolResult:
    """What the model reads for a call cut off by its worker's death."""
    return ToolResult.from_error(
        ToolError(
            f"the call to {tool!r} was interrupted: the worker running it stopped before it "
            "returned, so it may have partly happened. Check its effects before you repeat "
            "it, then continue.",
            code="interrupted",
        )
    )


def interrupted_rows(run: RunRecord, calls: tuple[tuple[str, str], ...]) -> list[NewRow]:
    """The ``tool_result`` rows answering ``calls`` as interrupted."""
    return [
        NewRow(
            kind="tool_result",
            run_id=run.id,
            user_id=run.user_id,
            call_id=call_id,
            data={"tool": tool, "result": interrupted_result(tool).to_json()},
        )
        for call_id, tool in calls
    ]
