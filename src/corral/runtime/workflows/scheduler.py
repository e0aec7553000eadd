"""The in-process scheduler: each tick fires the slots that have come, once each.

A tick is one indexed query for workflows whose stored next slot has passed, then
:func:`~corral.runtime.workflows.triggers.plan` for each of those only. Claiming a slot is
an insert keyed by (workflow, slot), so a slot fires once however many schedulers look and
whether or not the platform restarted in between. The scale-out issue runs the same
``tick`` on an engine's periodic task instead of this loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, cast

from corral.errors import CorralError
from corral.runtime.periodic import Periodic
from corral.runtime.workflows.runs import RunStart
from corral.runtime.workflows.triggers import MissedPolicy, plan

if TYPE_CHECKING:
    from corral.runtime.workflows.service import Workflows

__all__ = ["Fired", "Scheduler"]

log = logging.getLogger("corral.workflows")

TICK_SECONDS = 15.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Fired:
    """What a tick did with one slot."""

    workflow_id: str
    slot: datetime
    outcome: str
    """``started``, ``skipped`` or ``refused``."""
    run_id: str | None = None
    note: str = ""


class Scheduler:
    def __init__(self, workflows: Workflows, *, interval: float = TICK_SECONDS) -> None:
        self._workflows = workflows
        self._periodic = Periodic(
            [("a workflow scheduler tick", self.tick)], interval=interval, log=log
        )

    async def tick(self, now: datetime | None = None) -> list[Fired]:
        """Fire (or skip, by the missed-slot policy) every slot due at ``now``."""
        workflows = self._workflows
        now = now or workflows.clock()
        live = await workflows.rt.kernel.live_settings()
        policy = cast(MissedPolicy, live["workflow_missed_fire"])
        fired: list[Fired] = []
        for workflow_id in await workflows.store.due(now):
            try:
                workflow = await workflows.store.get(workflow_id)
            except CorralError:
                continue  # deleted since the query
            anchor = workflow.last_fire_at or workflow.created_at
            due = plan(workflow.setup.get("schedule"), anchor, now, policy)
            if due.slot is None:
                await workflows.store.move_schedule(workflow_id, due.next_fire_at)
                continue
            note = "missed while no scheduler ran" if due.missed else ""
            if not due.run:
                note += f"; skipped (workflow_missed_fire is {policy!r})"
            outcome = "claimed" if due.run else "skipped"
            claimed = await workflows.store.claim_slot(
                workflow_id, due.slot, outcome=outcome, note=note, next_fire_at=due.next_fire_at
            )
            if not claimed:
                continue  # another scheduler, or this one before a restart, had it
            if not due.run:
                fired.append(Fired(workflow_id=workflow_id, slot=due.slot, outcome="skipped"))
                continue
            fired.append(await self._start(workflow_id, due.slot, note))
        return fired

    async def _start(self, workflow_id: str, slot: datetime, note: str) -> Fired:
        workflows = self._workflows
        try:
            workflow = await workflows.store.get(workflow_id)
            run = await workflows.start_run(
                workflow, RunStart(trigger="schedule", started_by="schedule", slot=slot)
            )
        except CorralError as exc:
            log.warning("workflow %s could not start its run for %s: %s", workflow_id, slot, exc)
            await workflows.store.settle_fire(
                workflow_id, slot, outcome="refused", run_id=None, note=str(exc)
            )
            return Fired(workflow_id=workflow_id, slot=slot, outcome="refused", note=str(exc))
        await workflows.store.settle_fire(
            workflow_id, slot, outcome="started", run_id=run.id, note=note
        )
        return Fired(workflow_id=workflow_id, slot=slot, outcome="started", run_id=run.id)

    # -- the loop of a hosting process ------------------------------------------------------

    def start(self) -> None:
        self._periodic.start()

    async def close(self) -> None:
        await self._periodic.close()
