"""How workflows read: the text the model gets and the data the workflow card shows.

Neither ever holds a webhook key: hooks are shown by path and key id only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.errors import NotFound
from corral.runtime.runs import TERMINAL
from corral.runtime.workflows.store import WorkflowRecord

if TYPE_CHECKING:
    from corral.runtime.workflows.service import Workflows

__all__ = ["Shown", "describe_run", "describe_setup", "describe_workflows"]

MISSED = {
    "run_once": "a slot missed while the platform was down runs once when it is back",
    "skip": "a slot missed while the platform was down is skipped",
}


@dataclass(frozen=True, slots=True)
class Shown:
    text: str
    data: dict[str, Any]


def _when(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


async def describe_setup(service: Workflows, workflow: WorkflowRecord) -> Shown:
    """A workflow's whole setup, its schedule state, webhooks, versions and recent runs."""
    setup = workflow.setup
    live = await service.rt.kernel.live_settings()
    ceiling = int(live["workflow_runtime_ceiling_minutes"])
    policy = str(live["workflow_missed_fire"])
    try:
        owner = (await service.rt.kernel.caller(workflow.owner_id)).name
    except NotFound:
        owner = "(removed user)"
    hooks = await service.hooks.list_hooks(workflow.id)
    fires = await service.store.fires(workflow.id, limit=5)
    runs = await service.store.run_links(workflow.id, limit=5)
    versions = await service.store.versions(workflow.id)
    last_change = versions[-1]["note"] if versions else ""
    asked = setup.get("max_runtime_minutes")
    data: dict[str, Any] = {
        "workflow_id": workflow.id,
        "owner": owner,
        "version": workflow.version,
        "last_change": last_change,
        "setup": {k: v for k, v in setup.items() if k not in ("template", "evolve")},
        "template": setup.get("template"),
        "goal_locked": bool(setup.get("goal")) and setup.get("evolve") != "agent",
        "next_fire_at": _when(workflow.next_fire_at) if workflow.status == "active" else None,
        "missed_fire_policy": policy,
        "max_runtime_minutes_effective": min(int(asked or ceiling), ceiling),
        "runtime_ceiling_minutes": ceiling,
        "webhooks": [
            {
                "hook_id": h["hook_id"],
                "path": h["path"],
                "primary": h["primary"],
                "live_keys": sum(1 for k in h["keys"] if not k["revoked"]),
            }
            for h in hooks
        ],
        "recent_fires": [
            {"slot": f.slot.isoformat(), "outcome": f.outcome, "run_id": f.run_id, "note": f.note}
            for f in fires
        ],
        "recent_runs": [
            {"run_id": r.run_id, "trigger": r.trigger, "started_at": r.created_at.isoformat()}
            for r in runs
        ],
    }
    lines = [
        f"Workflow {workflow.id} “{workflow.title}” — {workflow.status}, version "
        f"{workflow.version} ({last_change}), owner {owner}.",
        f"Instruction: {setup['instruction']}",
    ]
    schedule = setup.get("schedule")
    if schedule is None:
        lines.append("Schedule: none (manual runs only).")
    elif "cron" in schedule:
        lines.append(f"Schedule: cron {schedule['cron']!r} in {schedule['timezone']}.")
    else:
        lines.append(f"Schedule: once at {schedule['at']}.")
    if schedule is not None:
        nxt = data["next_fire_at"]
        lines.append(
            (f"Next run: {nxt}. " if nxt else "Next run: none while it is not active. ")
            + f"Missed slots: {MISSED.get(policy, policy)} (live setting workflow_missed_fire)."
        )
    for hook in data["webhooks"]:
        contract = next(h["body_schema"] for h in hooks if h["hook_id"] == hook["hook_id"])
        lines.append(
            f"Webhook {hook['hook_id']}{' (primary)' if hook['primary'] else ''}: POST "
            f"{hook['path']} with a key; {hook['live_keys']} live key(s) (a person issues keys "
            f"with `corral workflows keys issue`). Body contract: {json.dumps(contract)}"
        )
    if setup.get("goal"):
        lock = (
            "the agent may change it" if setup.get("evolve") == "agent" else "locked to the agent"
        )
        loop = f", loop bound {setup['loop']}" if setup.get("loop") else ""
        lines.append(f"Goal: {setup['goal']} ({lock}{loop}).")
    lines.append(f"Model: {setup.get('model') or 'the agent default'}.")
    lines.append(
        f"Runtime limit: {data['max_runtime_minutes_effective']} min per run (asked "
        f"{asked or 'none'}; platform ceiling {ceiling})."
    )
    for name in ("tools_off", "packages_off", "delivery"):
        if setup.get(name):
            lines.append(f"{name}: {', '.join(setup[name])}.")
    shared = setup.get("shared_with") or []
    lines.append(
        "Shared with: "
        + (", ".join(shared) if shared else "nobody (its owner and workflow.manage only)")
        + "; whoever starts a run, it runs with the owner's rights."
    )
    if runs:
        lines.append("Recent runs: " + ", ".join(f"{r.run_id} ({r.trigger})" for r in runs) + ".")
    return Shown("\n".join(lines), data)


def describe_run(snapshot: dict[str, Any], *, started: bool) -> str:
    head = "Started run" if started else "Run"
    text = (
        f"{head} {snapshot['run_id']} of workflow {snapshot['workflow_id']}: "
        f"{snapshot['status']}, {snapshot['steps']} of {snapshot['step_budget']} steps"
    )
    if snapshot.get("detail"):
        text += f" ({snapshot['detail']})"
    text += "."
    if snapshot.get("wait_clamped_to") is not None:
        text += f" The wait was capped at {snapshot['wait_clamped_to']} s (workflow_wait_cap_s)."
    if snapshot["status"] == "parked":
        text += (
            " It waits for a person: "
            + ", ".join(f"{w['kind']} {w['id']} for {w['tool']!r}" for w in snapshot["waiting"])
            + "."
        )
    elif snapshot.get("wait_expired"):
        text += " The wait ended before the run did; this is how it stands now. Read it again "
        text += "later with get and its run_id."
    if snapshot["status"] in TERMINAL:
        text += f"\nAnswer:\n{snapshot.get('answer') or '(no answer text)'}"
    return text


def describe_workflows(listed: list[WorkflowRecord]) -> str:
    if not listed:
        return "No workflows match."
    lines = [f"{len(listed)} workflow(s):"]
    for w in listed:
        schedule = w.setup.get("schedule")
        when = (
            "manual"
            if schedule is None
            else (f"cron {schedule['cron']}" if "cron" in schedule else f"once {schedule['at']}")
        )
        lines.append(f"- {w.id} “{w.title}” — {w.status}, {when}")
    return "\n".join(lines)
