"""How a run stops advancing: it parks, or it ends and leaves nothing open behind it.

Ending a run — finished, stopped, failed or partial, by the loop, by Stop or by start-up
recovery — always goes through :func:`end_run`: it closes every approval (and, through the
run-end hooks, every question) the run still had open, writes a ``run_ended`` card, frees
the conversation and wakes it, so a report that waited for this turn is delivered now.

Parking and ending both store first and announce after: the status board, the ``run``
event and the wake go through ``rt.jobs.after_job``, so they happen once the run's job has
left the runner (at once when no job of the run is running: Stop of a parked run, recovery).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from corral.runtime import turns
from corral.runtime.appends import append_rows, write
from corral.runtime.conversations import release_conversation
from corral.runtime.ending_writes import end_through_writer
from corral.runtime.runs import RunRecord, RunStatus, Wait, move_run
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store.writer import SqliteWriter

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["Outcome", "end_run", "park_run"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    status: RunStatus
    reason: str | None = None
    detail: str = ""
    waits: tuple[Wait, ...] = ()
    budget: str = ""
    """Spent against limit of a run with a budget, one line (shown on its run_ended card)."""


async def park_run(
    rt: RunHost,
    run: RunRecord,
    outcome: Outcome,
    active_seconds: float,
    *,
    held_lease: int | None = None,
) -> bool:
    """Park a running run on its waits; nothing is held open while it waits. False when it
    was no longer running (under ``held_lease``, when given)."""
    if not await rt.runs.move(
        run.id,
        from_statuses=["running"],
        to="parked",
        held_lease=held_lease,
        waiting=[w.to_json() for w in outcome.waits],
        active_seconds=active_seconds,
        steps=run.steps,
    ):
        return False
    await rt.jobs.after_job(run.id, partial(_announce, rt, run, outcome))
    return True


async def end_run(
    rt: RunHost,
    run: RunRecord,
    outcome: Outcome,
    *,
    from_statuses: Sequence[str] = ("running",),
    active_seconds: float | None = None,
    steps: int | None = None,
    wake: bool = True,
    held_lease: int | None = None,
) -> bool:
    """End ``run`` with ``outcome``; False when it was no longer in ``from_statuses`` (or
    no longer under ``held_lease``, a cluster worker's claim).

    With ``wake`` the freed conversation continues with any delivery that waited for it.
    """
    note = f"the run ended ({outcome.status}" + (f": {outcome.reason})" if outcome.reason else ")")
    values: dict[str, Any] = {"reason": outcome.reason, "detail": outcome.detail, "waiting": []}
    if active_seconds is not None:
        values["active_seconds"] = active_seconds
    if steps is not None:
        values["steps"] = steps
    card = NewRow(
        kind="card",
        run_id=run.id,
        user_id=run.user_id,
        data={
            "card": "run_ended",
            "status": outcome.status,
            "reason": outcome.reason,
            "detail": outcome.detail,
            **({"budget": outcome.budget} if outcome.budget else {}),
        },
    )

    async def work(session: AsyncSession) -> list[TimelineRow] | None:
        # In the transaction that ends the run, as its own one before: closed even when the
        # run was no longer this caller's to end.
        await rt.kernel.approvals.close_in(session, run.id, note)
        if not await move_run(
            session,
            run.id,
            from_statuses=from_statuses,
            to=outcome.status,
            held_lease=held_lease,
            **values,
        ):
            return None
        stored = await append_rows(session, run.conversation_id, [card])
        await release_conversation(session, run.conversation_id, run.id)
        return stored

    writer = rt.kernel.writer
    if isinstance(writer, SqliteWriter):
        stored = await end_through_writer(
            writer,
            run_id=run.id,
            conversation_id=run.conversation_id,
            status=outcome.status,
            from_statuses=from_statuses,
            held_lease=held_lease,
            values=values,
            card=card,
            note=note,
        )
    else:
        stored = await write(rt.kernel.sessions, work)
    if stored is None:
        return False
    rt.publish_rows(run.conversation_id, stored)
    for hook in rt.run_end_hooks:
        await hook(run, outcome.status)
    await rt.jobs.after_job(run.id, partial(_announce, rt, run, outcome, wake=wake))
    return True


async def _announce(rt: RunHost, run: RunRecord, outcome: Outcome, *, wake: bool = False) -> None:
    """Tell this process how ``run`` settled; with ``wake`` its conversation continues."""
    await rt.board.set(run.id, outcome.status)
    rt.publish_run(run.conversation_id, run.id, outcome.status, outcome.reason, outcome.detail)
    if wake:
        await turns.wake(rt, run.conversation_id)
