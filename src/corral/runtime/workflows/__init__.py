"""Workflows: saved instructions that run on a schedule, from a webhook, or by hand.

:class:`Workflows` is the one service the tool, the routes, the CLI and the scheduler use;
the trigger logic is a plain function (:func:`plan`) so any engine can run it.
"""

from corral.runtime.workflows.runs import RunStart
from corral.runtime.workflows.scheduler import Fired, Scheduler
from corral.runtime.workflows.service import Workflows
from corral.runtime.workflows.tool import WorkflowTool
from corral.runtime.workflows.triggers import Plan, next_slot, plan
from corral.runtime.workflows.webhooks import Webhooks

__all__ = [
    "Fired",
    "Plan",
    "RunStart",
    "Scheduler",
    "Webhooks",
    "WorkflowTool",
    "Workflows",
    "next_slot",
    "plan",
]
