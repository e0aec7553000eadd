"""Who may see, run and cancel a workflow: the one rule every route, verb, page and CLI asks.

A workflow runs with its owner's rights, so reaching it at all — reading its setup, versions,
hooks or runs, starting a run, cancelling one — is for its owner, a holder of
``workflow.manage``, or someone the owner named in the setup's ``shared_with`` (``user:NAME``
or ``role:NAME``). Sharing is the owner's consent to lend those rights: a sharee's run still
runs as the owner. The verb's own feature (``workflow.read``, ``workflow.dispatch``) is asked
on top. A caller outside the rule is told the workflow does not exist, in the very words an
unknown id gets, so ids cannot be probed. Changing a workflow, its share or its webhooks stays
with the owner and ``workflow.manage``.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.errors import NotFound
from corral.policy.identity import Caller
from corral.runtime.workflows.store import WorkflowRecord, WorkflowRunLink

__all__ = [
    "MANAGE",
    "can_cancel",
    "can_reach",
    "hidden_run",
    "hidden_workflow",
    "reachable",
    "share_entries",
]

MANAGE = "workflow.manage"


def share_entries(workflow: WorkflowRecord) -> frozenset[str]:
    return frozenset(str(entry) for entry in workflow.setup.get("shared_with") or ())


def can_reach(caller: Caller, workflow: WorkflowRecord) -> bool:
    """Owner, ``workflow.manage``, or named in ``shared_with`` by user name or role."""
    if caller.user_id == workflow.owner_id or caller.grants.has(MANAGE):
        return True
    shared = share_entries(workflow)
    return f"user:{caller.name}" in shared or f"role:{caller.role}" in shared


def can_cancel(caller: Caller, workflow: WorkflowRecord, link: WorkflowRunLink) -> bool:
    """The owner and ``workflow.manage`` cancel any run; a sharee only the runs they started."""
    if caller.user_id == workflow.owner_id or caller.grants.has(MANAGE):
        return True
    return can_reach(caller, workflow) and link.started_by == caller.user_id


def reachable(caller: Caller, workflows: Iterable[WorkflowRecord]) -> list[WorkflowRecord]:
    return [w for w in workflows if can_reach(caller, w)]


def hidden_workflow(workflow_id: str) -> NotFound:
    """The refusal for an unreachable workflow: word for word the unknown-id answer."""
    return NotFound(f"no workflow {workflow_id!r}; `list` shows the workflows")


def hidden_run(run_id: str, workflow_id: str | None = None) -> NotFound:
    """The refusal for a run of an unreachable workflow: word for word the unknown-run answer."""
    where = f" of workflow {workflow_id!r}" if workflow_id else ""
    return NotFound(f"no workflow run {run_id!r}{where}; `get` lists recent runs")
