"""Workflows for people, the tool and the scheduler: one service, the same checks for all.

Rights: reading needs ``workflow.read``; creating and changing need ``workflow.write``;
starting a run needs ``workflow.dispatch``. A workflow runs with its owner's rights, so who may
reach it at all (read, run, cancel) is :mod:`~corral.runtime.workflows.access`'s one rule, and
only its owner (or a holder of ``workflow.manage``) may change it, share it, issue its webhook
keys, or archive and delete it. ``check_*`` methods write nothing, so a caller can check every part
of a request before any of it is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.errors import FeatureMissing, InvalidArguments, NotFound, UsageError
from corral.policy.identity import Caller
from corral.runtime.runs import TERMINAL, RunRecord
from corral.runtime.workflows.access import (
    MANAGE,
    can_cancel,
    can_reach,
    hidden_run,
    hidden_workflow,
    reachable,
)
from corral.runtime.workflows.deliveries import HookDeliveries
from corral.runtime.workflows.hooks import HookStore, RateLimiter, body_problems
from corral.runtime.workflows.runs import RunStart, run_snapshot, start_workflow_run, wait_settled
from corral.runtime.workflows.setup import apply_changes, new_setup
from corral.runtime.workflows.store import WorkflowRecord, WorkflowRunLink, WorkflowStore
from corral.runtime.workflows.templates import Template, TemplateStore
from corral.runtime.workflows.triggers import next_slot
from corral.store.tables import utcnow

if TYPE_CHECKING:
    from corral.runtime.goals import Goals
    from corral.runtime.runtime import Runtime

__all__ = ["CheckedSet", "Workflows"]

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedSet:
    """A ``set`` that passed every check: what it will write."""

    current: WorkflowRecord | None
    setup: dict[str, Any]
    changed: list[str]


class Workflows:
    def __init__(self, rt: Runtime, goals: Goals | None, *, clock: Clock = utcnow) -> None:
        self.rt = rt
        self.goals = goals
        self.clock = clock
        self.store = WorkflowStore(rt.kernel.sessions)
        self.hooks = HookStore(rt.kernel.sessions)
        self.deliveries = HookDeliveries(rt.kernel.sessions)
        self.templates = TemplateStore(rt.kernel.sessions)
        self.hook_rate = RateLimiter()

    # -- rights ------------------------------------------------------------------------------

    @staticmethod
    def need(caller: Caller, feature: str, doing: str) -> None:
        if not caller.grants.has(feature):
            raise FeatureMissing(
                f"{doing} needs feature {feature!r}, which role {caller.role!r} lacks; ask an "
                "administrator for it",
                data={"features": [feature]},
            )

    def need_owner(self, caller: Caller, workflow: WorkflowRecord, doing: str) -> None:
        """Owner or ``workflow.manage``; a caller who may not even reach it is told 404."""
        if not can_reach(caller, workflow):
            raise hidden_workflow(workflow.id)
        if caller.user_id != workflow.owner_id and not caller.grants.has(MANAGE):
            raise FeatureMissing(
                f"workflow {workflow.id!r} runs with its owner's rights, so {doing} is for its "
                f"owner (or a holder of {MANAGE!r}); role {caller.role!r} is neither",
                data={"features": [MANAGE]},
            )

    async def reached(self, workflow_id: str, caller: Caller) -> WorkflowRecord:
        """The workflow, if the access rule lets ``caller`` reach it; else the unknown-id 404."""
        workflow = await self.store.get(workflow_id)
        if not can_reach(caller, workflow):
            raise hidden_workflow(workflow_id)
        return workflow

    async def readable(self, workflow_id: str, caller: Caller) -> WorkflowRecord:
        self.need(caller, "workflow.read", "reading workflows")
        return await self.reached(workflow_id, caller)

    async def visible(self, caller: Caller, *, status: str | None = None) -> list[WorkflowRecord]:
        """The workflows ``caller`` may reach; the others are not listed at all."""
        self.need(caller, "workflow.read", "reading workflows")
        return reachable(caller, await self.store.list_workflows(status=status))

    async def readable_run(
        self, run_id: str, caller: Caller, workflow_id: str | None = None
    ) -> WorkflowRunLink:
        """A run's link, if ``caller`` may read its workflow; else the unknown-run 404."""
        self.need(caller, "workflow.read", "reading workflow runs")
        link = await self.run_link(run_id, workflow_id)
        try:
            await self.reached(link.workflow_id, caller)
        except NotFound:
            raise hidden_run(run_id, workflow_id) from None
        return link

    # -- set ---------------------------------------------------------------------------------

    async def check_set(self, changes: Mapping[str, Any], caller: Caller) -> CheckedSet:
        """Check a create or change without writing anything."""
        self.need(caller, "workflow.write", "creating or changing a workflow")
        workflow_id = changes.get("workflow_id")
        current = await self.store.get(str(workflow_id)) if workflow_id else None
        if current is not None:
            self.need_owner(caller, current, "changing it")
            if current.status == "archived":
                raise InvalidArguments(
                    f"workflow {current.id!r} is archived; restore it first "
                    f"(`corral workflows restore {current.id}`)"
                )
        if changes.get("model"):
            try:
                self.rt.models.resolve(str(changes["model"]))
            except UsageError as exc:
                raise InvalidArguments(
                    f"model {changes['model']!r} cannot be used: {exc}"
                ) from None
        registry = self.rt.kernel.registry
        setup, changed = apply_changes(
            current.setup if current is not None else new_setup(),
            changes,
            now=self.clock(),
            known_tools=frozenset(registry.tools) | frozenset(registry.pending),
            known_packages=frozenset(registry.packages),
            creating=current is None,
        )
        return CheckedSet(current=current, setup=setup, changed=changed)

    async def apply_set(self, checked: CheckedSet, caller: Caller) -> WorkflowRecord:
        now = self.clock()
        setup = checked.setup
        if checked.current is None:
            created = await self.store.create(
                owner_id=caller.user_id,
                setup=setup,
                next_fire_at=next_slot(setup["schedule"], now),
                anchor=now,
            )
            await self.hooks.sync_primary(created.id, setup["webhook"])
            return created
        if not checked.changed:
            return checked.current
        moved = None
        if {"schedule", "status"} & set(checked.changed):
            # Slots before a schedule change or a resume never fire.
            moved = (next_slot(setup["schedule"], now), now)
        changed = await self.store.change(
            checked.current,
            setup,
            changed_by=caller.user_id,
            note="changed " + ", ".join(checked.changed),
            schedule_moved=moved,
        )
        if "webhook" in checked.changed:
            await self.hooks.sync_primary(changed.id, setup["webhook"])
        return changed

    async def set(self, changes: Mapping[str, Any], caller: Caller) -> WorkflowRecord:
        return await self.apply_set(await self.check_set(changes, caller), caller)

    # -- run ---------------------------------------------------------------------------------

    async def check_run(self, workflow_id: str, run_input: Any, caller: Caller) -> WorkflowRecord:
        self.need(caller, "workflow.dispatch", "starting a workflow run")
        workflow = await self.reached(workflow_id, caller)
        if workflow.status == "archived":
            raise InvalidArguments(f"workflow {workflow_id!r} is archived; restore it to run it")
        contract = (workflow.setup.get("webhook") or {}).get("body_schema")
        if run_input is not None and contract is not None:
            problems = body_problems(contract, run_input)
            if problems:
                listed = "; ".join(f"{p.pointer}: {p.message}" for p in problems)
                raise InvalidArguments(
                    f"input does not match the webhook body contract of {workflow_id!r}: {listed}",
                    data={"problems": [p.to_json() for p in problems]},
                )
        return workflow

    async def start_run(self, workflow: WorkflowRecord, start: RunStart) -> RunRecord:
        return await start_workflow_run(self.rt, self.store, self.goals, workflow, start)

    async def run(self, workflow_id: str, caller: Caller, *, run_input: Any = None) -> RunRecord:
        workflow = await self.check_run(workflow_id, run_input, caller)
        start = RunStart(trigger="manual", started_by=caller.user_id, input=run_input)
        return await self.start_run(workflow, start)

    async def run_link(self, run_id: str, workflow_id: str | None = None) -> WorkflowRunLink:
        link = await self.store.run_link(run_id)
        if link is None or (workflow_id is not None and link.workflow_id != workflow_id):
            raise hidden_run(run_id, workflow_id)
        return link

    async def wait_cap(self) -> int:
        return int((await self.rt.kernel.live_settings())["workflow_wait_cap_s"])

    async def snapshot(
        self, run_id: str, *, wait_seconds: float = 0, lend: bool = False
    ) -> dict[str, Any]:
        """A run as it stands, after waiting up to ``wait_seconds`` (clamped) for it to end."""
        link = await self.run_link(run_id)
        cap = await self.wait_cap()
        run = await wait_settled(self.rt, run_id, min(wait_seconds, cap), lend=lend)
        shown = await run_snapshot(self.rt, run, link)
        if wait_seconds > cap:
            shown["wait_clamped_to"] = cap
        if wait_seconds and run.status not in TERMINAL:
            shown["wait_expired"] = run.status != "parked"
        return shown

    async def runs(self, workflow_id: str, caller: Caller, limit: int = 20) -> list[dict[str, Any]]:
        await self.readable(workflow_id, caller)
        shown = []
        for link in await self.store.run_links(workflow_id, limit=limit):
            run = await self.rt.runs.find(link.run_id)
            if run is not None:
                shown.append(await run_snapshot(self.rt, run, link))
        return shown

    async def cancel(self, run_id: str, caller: Caller) -> RunRecord:
        link = await self.run_link(run_id)
        workflow = await self.store.get(link.workflow_id)
        if not can_reach(caller, workflow):
            raise hidden_run(run_id)
        if not can_cancel(caller, workflow, link):
            raise FeatureMissing(
                f"run {run_id!r} was started by someone else; a workflow shared with you lets "
                f"you cancel only the runs you started (its owner or a holder of {MANAGE!r} "
                "may cancel any)",
                data={"features": [MANAGE]},
            )
        run = await self.rt.runs.get(run_id)
        return await self.rt.stop(run_id, user=run.user_id)

    # -- lifecycle ---------------------------------------------------------------------------

    async def archive(self, workflow_id: str, caller: Caller) -> WorkflowRecord:
        return await self._set_status(workflow_id, caller, "archived", "archived")

    async def restore(self, workflow_id: str, caller: Caller) -> WorkflowRecord:
        """Back to the status it had before it was archived (paused if that is unknown)."""
        self.need(caller, "workflow.write", "restored workflows")
        workflow = await self.store.get(workflow_id)
        self.need_owner(caller, workflow, "having it restored")
        if workflow.status != "archived":
            raise UsageError(f"workflow {workflow_id!r} is {workflow.status}, not archived")
        before = "paused"
        for version in reversed(await self.store.versions(workflow_id)):
            if version["setup"]["status"] != "archived":
                before = version["setup"]["status"]
                break
        return await self._set_status(workflow_id, caller, before, "restored")

    async def _set_status(
        self, workflow_id: str, caller: Caller, status: str, note: str
    ) -> WorkflowRecord:
        self.need(caller, "workflow.write", f"{note} workflows")
        workflow = await self.store.get(workflow_id)
        self.need_owner(caller, workflow, f"having it {note}")
        if workflow.status == status:
            return workflow
        now = self.clock()
        return await self.store.change(
            workflow,
            {**workflow.setup, "status": status},
            changed_by=caller.user_id,
            note=note,
            schedule_moved=(next_slot(workflow.setup["schedule"], now), now),
        )

    async def delete(self, workflow_id: str, caller: Caller) -> None:
        """Delete an archived workflow for good, with its versions, hooks and run links."""
        self.need(caller, "workflow.write", "deleting workflows")
        workflow = await self.store.get(workflow_id)
        self.need_owner(caller, workflow, "deleting it")
        if workflow.status != "archived":
            raise UsageError(
                f"workflow {workflow_id!r} is {workflow.status}; archive it first, then delete "
                "it (a permanent delete cannot be undone)"
            )
        await self.store.delete(workflow_id)

    # -- templates ---------------------------------------------------------------------------

    async def create_from_template(
        self, name: str, caller: Caller, overrides: Mapping[str, Any] | None = None
    ) -> WorkflowRecord:
        """A new workflow from template ``name``; the fields in ``overrides`` win."""
        template = await self.templates.get(name)
        changes = {**template.setup, **(overrides or {})}
        changes.pop("workflow_id", None)
        checked = await self.check_set(changes, caller)
        setup = {**checked.setup, "template": name, "evolve": template.evolve}
        return await self.apply_set(CheckedSet(current=None, setup=setup, changed=[]), caller)

    async def save_template(
        self,
        name: str,
        setup: Mapping[str, Any],
        caller: Caller,
        *,
        description: str = "",
        evolve: str | None = None,
    ) -> Template:
        self.need(caller, "workflow.write", "saving workflow templates")
        if setup.get("shared_with"):
            raise InvalidArguments(
                "a template cannot hold shared_with: a share is one workflow owner's decision; "
                "send the setup without it and share the workflow made from it instead"
            )
        setup = {k: v for k, v in setup.items() if k != "shared_with"}
        return await self.templates.save(
            name, setup, by=caller.user_id, description=description, evolve=evolve
        )
