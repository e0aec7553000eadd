"""Parked runs and the answers that resume them.

A run parks when calls of its last turn wait for something outside it (a person's approval
now, an answer to ``ask_question`` in issue 7). Nothing is held open: the run is a row with
``status="parked"`` and its waits. An answer, in any process, stores the call's result as
the ``tool_result`` row the turn was missing (:func:`resolve_wait`); once every wait of the
turn has its result, the run is queued again and continues exactly where it stood.

Approvals plug in through :func:`decide_approval`, the platform's approval hook. Deciding
never runs the call: deny stores the refusal as the call's result; approve only records
the answer (an approved call counts as answered, :func:`settled`), the run is queued, and
its own job runs the call with ``approved=True`` (rights re-resolved, live output and Stop
as for any call) before it continues the turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from corral.errors import ApprovalDenied, UsageError
from corral.kernel.approvals import ApprovalRecord, Decision
from corral.policy.identity import Caller
from corral.runtime.appends import append_rows, write
from corral.runtime.calls import result_row
from corral.runtime.runs import RunRecord, Wait, move_run
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store import runtime_tables as rt_tables
from corral.store import tables as t
from corral.tools.results import ToolResult

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = [
    "answered_calls",
    "decide_approval",
    "denial",
    "open_waits",
    "resolve_wait",
    "resume_if_answered",
    "settled",
]


def denial(tool: str, decider: Caller, note: str | None) -> ToolResult:
    reason = f": {note}" if note else ""
    return ToolResult.from_error(
        ApprovalDenied(
            f"{decider.name} denied the call to {tool!r}{reason}. Do not repeat it; continue "
            "without it or ask what to do instead."
        ),
        status="denied",
    )


async def decide_approval(
    rt: RunHost,
    record: ApprovalRecord,
    decision: Decision,
    decider: Caller,
    note: str | None,
    surface: str,
) -> ToolResult | None:
    """Answer an approval that belongs to a run; None when no run of ours owns it.

    Never runs the call: deny stores the refusal as its result; approve stores a
    ``decided`` card and queues the run once nothing else holds it, and the run's own job
    runs the call (:mod:`corral.runtime.approved_calls`). Returns at once either way."""
    if record.run_id is None or record.call_id is None:
        return None
    run = await rt.runs.find(record.run_id)
    if run is None:
        return None
    card: dict[str, object] = {
        "card": "decided",
        "wait": {"kind": "approval", "id": record.id},
        "decision": decision,
        "by": decider.name,
        "surface": surface,
        "note": note,
    }
    if decision == "deny":
        result = denial(record.tool, decider, note)
        await rt.kernel.approvals.store_result(record.id, result.to_json())
        try:
            await resolve_wait(rt, run.id, record.call_id, result, card=card)
        except UsageError:
            pass  # the run ended meanwhile (stopped): the result stays on the approval record
        return result
    await _approved(rt, run.id, record.call_id, card)
    return ToolResult.wait_for(
        "approval",
        record.id,
        f"{decider.name} approved the call to {record.tool!r}; it runs in run {run.id} "
        "(its result comes in the conversation)",
        data={"approval_id": record.id, "run_id": run.id, "decision": "approve"},
    )


async def _approved(rt: RunHost, run_id: str, call_id: str, card: dict[str, object]) -> None:
    """Store the ``decided`` card of an approved call and queue its parked run when no
    other wait holds it; a run still in its turn finds the approval when it parks."""

    async def work(session: AsyncSession) -> tuple[RunRecord, list[TimelineRow], bool] | None:
        row = await session.get(rt_tables.Run, run_id)
        if row is None or row.status not in ("parked", "running"):
            return None  # ended meanwhile: the approval record keeps the answer
        run = RunRecord.of(row)
        stored = await append_rows(
            session,
            run.conversation_id,
            [NewRow(kind="card", run_id=run.id, user_id=run.user_id, call_id=call_id, data=card)],
        )
        resumed = False
        if run.status == "parked":
            waits = [w.call_id for w in run.waiting]
            if not set(waits) - await settled(session, run.id, waits):
                resumed = await move_run(
                    session, run.id, from_statuses=["parked"], to="queued", waiting=[]
                )
        return run, stored, resumed

    done = await write(rt.kernel.sessions, work)
    if done is None:
        return
    run, stored, resumed = done
    rt.publish_rows(run.conversation_id, stored)
    if resumed:
        await _queued(rt, run)


async def settled(session: AsyncSession, run_id: str, call_ids: list[str]) -> set[str]:
    """The calls among ``call_ids`` that no longer wait for a person: answered with a
    result, or approved and not started yet (the run's job runs them when it continues;
    once started, a call that waits in turn, a delegate's, waits for that)."""
    a = t.Approval
    approved = await session.scalars(
        select(a.call_id).where(
            a.run_id == run_id,
            a.status == "approved",
            a.dispatched_at.is_(None),
            a.call_id.in_(call_ids),
        )
    )
    return await _answered(session, run_id, call_ids) | {c for c in approved if c is not None}


async def _answered(session: AsyncSession, run_id: str, call_ids: list[str]) -> set[str]:
    r = rt_tables.ConversationRow
    found = await session.scalars(
        select(r.call_id).where(
            r.run_id == run_id, r.kind == "tool_result", r.call_id.in_(call_ids)
        )
    )
    return {c for c in found if c is not None}


async def answered_calls(rt: RunHost, run_id: str, call_ids: list[str]) -> set[str]:
    """The calls among ``call_ids`` of ``run_id`` that have their ``tool_result`` row."""
    async with rt.kernel.sessions() as session:
        return await _answered(session, run_id, call_ids)


async def open_waits(rt: RunHost, run_id: str, waits: tuple[Wait, ...]) -> tuple[Wait, ...]:
    """The waits still without a result (an answer may come before the turn ends)."""
    async with rt.kernel.sessions() as session:
        answered = await settled(session, run_id, [w.call_id for w in waits])
    return tuple(w for w in waits if w.call_id not in answered)


async def resume_if_answered(rt: RunHost, run: RunRecord) -> bool:
    """Queue a just-parked run again if every wait was answered while it parked."""
    async with rt.kernel.sessions.begin() as session:
        row = await session.get(rt_tables.Run, run.id)
        if row is None or row.status != "parked":
            return False
        waits = [w["call_id"] for w in row.waiting or ()]
        if set(waits) - await settled(session, run.id, waits):
            return False
        resumed = await move_run(session, run.id, from_statuses=["parked"], to="queued", waiting=[])
    if resumed:
        await _queued(rt, run)
    return resumed


async def _queued(rt: RunHost, run: RunRecord) -> None:
    await rt.board.set(run.id, "queued")
    rt.publish_run(run.conversation_id, run.id, "queued", None, "")
    rt.jobs.submit(run.id)


async def resolve_wait(
    rt: RunHost,
    run_id: str,
    call_id: str,
    result: ToolResult,
    *,
    card: dict[str, object] | None = None,
) -> bool:
    """Store the result a waiting call gets; True when that resumed the run.

    The generic way to answer any wait (issue 7's questions use it too). An answer that
    arrives while the turn is still running is stored and found when the run parks.
    Raises :class:`UsageError` when the run has no such call open or it was answered.
    """

    async def work(session: AsyncSession) -> tuple[RunRecord, list[TimelineRow], bool]:
        row = await session.get(rt_tables.Run, run_id)
        if row is None:
            raise UsageError(f"no run {run_id!r}")
        run = RunRecord.of(row)
        waits = {w.call_id: w for w in run.waiting}
        tool = waits[call_id].tool if call_id in waits else await _called(session, run, call_id)
        if tool is None or (run.status == "parked" and call_id not in waits):
            raise UsageError(f"run {run_id!r} is not waiting for call {call_id!r} ({run.status})")
        if run.status not in ("parked", "running"):
            raise UsageError(f"run {run_id!r} is {run.status}; it no longer takes answers")
        if call_id in await _answered(session, run.id, [call_id]):
            raise UsageError(f"call {call_id!r} of run {run_id!r} was answered already")
        rows = []
        if card is not None:
            rows.append(
                NewRow(kind="card", run_id=run.id, user_id=run.user_id, call_id=call_id, data=card)
            )
        rows.append(result_row(run, call_id, tool, result))
        stored = await append_rows(session, run.conversation_id, rows)
        resumed = False
        if run.status == "parked":
            open_ = set(waits) - await settled(session, run.id, list(waits))
            if not open_:
                resumed = await move_run(
                    session, run.id, from_statuses=["parked"], to="queued", waiting=[]
                )
        return run, stored, resumed

    run, stored, resumed = await write(rt.kernel.sessions, work)
    rt.publish_rows(run.conversation_id, stored)
    if resumed:
        await _queued(rt, run)
    return resumed


async def _called(session: AsyncSession, run: RunRecord, call_id: str) -> str | None:
    """The tool of the call ``call_id`` made in ``run``, if it made one."""
    r = rt_tables.ConversationRow
    data = await session.scalar(
        select(r.data).where(r.run_id == run.id, r.kind == "tool_call", r.call_id == call_id)
    )
    return str(data.get("tool", "")) if isinstance(data, dict) else None
