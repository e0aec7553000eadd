"""The workflows service with its scheduler and webhooks, built when this process first
needs them.

The workflows family (its service, stores, triggers, renderers and eight table models) is
nothing a command that lists or shows uses, and the service holds no state of its own: its
stores read the database each time. So it is built on first need: the ``workflow`` tool,
``services.get(Workflows)`` (the routes, pages, commands, execute's ticket, ``platform.
workflows``), the webhooks, the channels' deliveries, a scheduler tick (a cluster worker's
periodic task) or serving (which starts the scheduler). Built later, it is what it would
have been at open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from corral.tools.services import Deferred

if TYPE_CHECKING:
    from corral.runtime.goals import Goals
    from corral.runtime.runtime import Runtime
    from corral.runtime.workflows import Fired, Scheduler, Webhooks, Workflows, WorkflowTool
    from corral.tools.results import ToolResult
    from corral.tools.services import CallScope

__all__ = ["WorkflowsOnDemand"]

WORKFLOWS = "corral.runtime.workflows.service.Workflows"
SCHEDULER = "corral.runtime.workflows.scheduler.Scheduler"
WEBHOOKS = "corral.runtime.workflows.webhooks.Webhooks"
"""The services' :func:`~corral.tools.services.service_key`, known without importing them."""


class WorkflowsOnDemand:
    """The workflows, their scheduler, webhooks and tool service, built on first need; also
    ``services.workflows`` (the ``workflow`` tool's keeper)."""

    def __init__(self, runtime: Runtime, goals: Goals) -> None:
        self._runtime = runtime
        self._goals = goals
        self._workflows: Deferred[Workflows] = Deferred(self._build_workflows)
        self._scheduler: Deferred[Scheduler] = Deferred(self._build_scheduler)
        self._webhooks: Deferred[Webhooks] = Deferred(self._build_webhooks)
        self._tool: Deferred[WorkflowTool] = Deferred(self._build_tool)

    def workflows(self) -> Workflows:
        """The service, built now if it was not yet."""
        return self._workflows.value()

    def _build_workflows(self) -> Workflows:
        from corral.runtime.workflows import Workflows

        return Workflows(self._runtime, self._goals)

    def _build_scheduler(self) -> Scheduler:
        from corral.runtime.workflows import Scheduler

        return Scheduler(self.workflows())

    def _build_webhooks(self) -> Webhooks:
        from corral.runtime.workflows import Webhooks

        return Webhooks(self.workflows())

    def _build_tool(self) -> WorkflowTool:
        from corral.runtime.workflows import WorkflowTool

        return WorkflowTool(self.workflows())

    def deferred(self) -> dict[str, Deferred[Any]]:
        """The services, for :attr:`Services.deferred`."""
        return {WORKFLOWS: self._workflows, SCHEDULER: self._scheduler, WEBHOOKS: self._webhooks}

    # -- services.workflows (WorkflowKeeper) --------------------------------------------------

    async def call(
        self, args: dict[str, Any], ctx: CallScope, notes: Sequence[str], /
    ) -> ToolResult:
        return await self._tool.value().call(args, ctx, notes)

    # -- the runtime's hooks ------------------------------------------------------------------

    async def start_scheduler(self) -> None:
        """Serving: the scheduler fires due slots in this process."""
        self._scheduler.value().start()

    async def tick(self) -> list[Fired]:
        """A cluster worker's periodic task: fire the slots due now."""
        return await self._scheduler.value().tick()

    async def close(self) -> None:
        scheduler = self._scheduler.built
        if scheduler is not None:
            await scheduler.close()
