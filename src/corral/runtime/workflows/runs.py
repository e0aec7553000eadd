"""Workflow runs: start one as the workflow's owner, read one, wait for one to end.

A workflow run is a Run of kind ``workflow`` in a conversation of its own. Its owner is
the workflow's owner, whose rights are resolved again when it starts (and on every step,
as for any run). ``tools_off`` and ``packages_off`` become the run's narrowing, applied by
the pipeline on every call; the step budget and the wall-clock limit (the workflow's
``max_runtime_minutes`` under the platform ceiling) bound it independently.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.errors import ToolError, UsageError
from corral.kernel import DEFAULT_AGENT
from corral.runtime.agents import load_agent
from corral.runtime.budgets import parse_budget
from corral.runtime.budgets.pricing import cost_usd
from corral.runtime.delegation.answer import last_substantive_text
from corral.runtime.prompt.envelopes import render_untrusted
from corral.runtime.prompt_hooks import PromptBlocked, prompt_hooks
from corral.runtime.runs import TERMINAL, RunRecord
from corral.runtime.timeline import NewRow, TimelineRow
from corral.runtime.turns import TurnSpec, start_turn
from corral.runtime.workflows.spans import workflow_span
from corral.runtime.workflows.store import WorkflowRecord, WorkflowRunLink, WorkflowStore
from corral.store.tables import utcnow
from corral.tools.narrowing import Narrowing
from corral.tracing import Attr

if TYPE_CHECKING:
    from corral.runtime.goals import Goals
    from corral.runtime.host import RunHost

__all__ = ["RunStart", "run_snapshot", "start_workflow_run", "wait_settled"]

ANSWER_CAP = 4_000


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart:
    """Why and by whom a run starts."""

    trigger: str
    """``manual``, ``schedule`` or ``webhook``."""
    started_by: str
    """A user id, or ``schedule`` / ``webhook:<hook id>``."""
    input: Any = None
    hook_id: str | None = None
    slot: datetime | None = None
    parent_run_id: str | None = None
    """The run whose tool call started it: the workflow run spends from its budget."""


async def start_workflow_run(
    rt: RunHost,
    store: WorkflowStore,
    goals: Goals | None,
    workflow: WorkflowRecord,
    start: RunStart,
) -> RunRecord:
    """Create the run's conversation, set the workflow's goal in it, and queue the run."""
    tracer = rt.kernel.dispatcher.tracer
    with workflow_span(tracer, workflow.id, workflow.setup["title"], start.trigger) as span:
        run = await _start(rt, store, goals, workflow, start)
        if span is not None:
            span.set_attribute(Attr.RUN_ID, run.id)
        return run


async def _start(
    rt: RunHost,
    store: WorkflowStore,
    goals: Goals | None,
    workflow: WorkflowRecord,
    start: RunStart,
) -> RunRecord:
    setup = workflow.setup
    owner = await rt.kernel.caller(workflow.owner_id)
    if not owner.grants.has("workflow.dispatch"):
        raise ToolError(
            f"workflow {workflow.id!r} runs as its owner {owner.name!r}, whose role "
            f"{owner.role!r} no longer has feature 'workflow.dispatch'; nothing was started",
            code="feature_missing",
        )
    agent = await load_agent(rt.kernel.sessions, setup.get("agent") or DEFAULT_AGENT)
    live = await rt.kernel.live_settings()
    ceiling = int(live["workflow_runtime_ceiling_minutes"])
    minutes = min(int(setup.get("max_runtime_minutes") or ceiling), ceiling)
    conversation = await rt.conversations.create(
        owner_id=owner.user_id,
        agent=agent.name,
        profile=agent.profile,
        model=setup.get("model"),
        title=f"{setup['title']} · {start.trigger} run"[:200],
    )
    model = rt.pick_model(setup.get("model"), conversation, agent)
    budget = parse_budget(setup.get("budget"))
    if not budget.empty or start.parent_run_id is not None:
        await rt.budgets.set_conversation_budget(
            conversation.id, budget, set_by=owner.user_id, charged_to=start.parent_run_id
        )
    instruction = opening_text(workflow, start)
    try:
        context = await prompt_hooks(rt.hooks, conversation, instruction)
    except PromptBlocked as blocked:
        await rt.conversations.discard_unused(conversation.id)
        raise ToolError(
            f"the run of workflow {workflow.id!r} was not started: {blocked.reason}",
            code="hook_blocked",
        ) from None
    if setup.get("goal") and goals is not None:
        await goals.set_goal(
            conversation.id,
            setup["goal"],
            loop=setup.get("loop"),
            workflow=setup["title"],
            evolve="agent" if setup.get("evolve") == "agent" else None,
            user=owner.user_id,
        )
    spec = TurnSpec(
        conversation_id=conversation.id,
        user_id=owner.user_id,
        agent=agent.name,
        model=model,
        profile=agent.profile,
        trigger="message",
        hop=0,
        step_budget=agent.step_budget or int(live["run_step_budget"]),
        wall_clock_limit_s=minutes * 60.0,
        narrowing=Narrowing(
            blocked_tools=frozenset(setup.get("tools_off") or ()),
            disabled_packages=frozenset(setup.get("packages_off") or ()),
        ),
        kind="workflow",
    )
    opening = NewRow(
        kind="user_message",
        user_id=owner.user_id,
        data={
            "text": instruction,
            "workflow_id": workflow.id,
            **({"hook_context": context} if context else {}),
        },
    )
    started = await start_turn(rt, spec, [opening])
    if started is None:  # a brand-new conversation cannot be busy
        raise UsageError(f"the run of workflow {workflow.id!r} could not start")
    run = started[0]
    await store.link_run(
        WorkflowRunLink(
            run_id=run.id,
            workflow_id=workflow.id,
            version=workflow.version,
            conversation_id=conversation.id,
            trigger=start.trigger,
            started_by=start.started_by,
            hook_id=start.hook_id,
            slot=start.slot,
            created_at=utcnow(),
        )
    )
    return run


def opening_text(workflow: WorkflowRecord, start: RunStart) -> str:
    """The run's first message: the instruction, then any input inside the envelope."""
    title = workflow.setup["title"]
    when = f" for the slot {start.slot.isoformat()}" if start.slot else ""
    lines = [
        f'[workflow "{title}" ({workflow.id}) · started by {start.trigger}{when}]',
        workflow.setup["instruction"],
    ]
    if start.input is not None:
        body = json.dumps(start.input, indent=2, ensure_ascii=False, sort_keys=True)
        if start.trigger == "webhook":
            source = f"the caller of webhook {start.hook_id} of workflow {workflow.id}"
            what = "the body a webhook caller posted"
        else:
            source = "the person or agent who started this run"
            what = "the input given for this run"
        lines.append(render_untrusted("workflow_input", source, body, what=what))
    return "\n\n".join(lines)


async def run_snapshot(rt: RunHost, run: RunRecord, link: WorkflowRunLink) -> dict[str, Any]:
    """What the tool and the routes show of a workflow run."""
    snapshot: dict[str, Any] = {
        "run_id": run.id,
        "workflow_id": link.workflow_id,
        "version": link.version,
        "conversation_id": run.conversation_id,
        "trigger": link.trigger,
        "status": run.status,
        "reason": run.reason,
        "detail": run.detail,
        "steps": run.steps,
        "step_budget": run.step_budget,
        "max_runtime_minutes": round(run.wall_clock_limit_s / 60, 2),
        "waiting": [w.to_json() for w in run.waiting],
        "started_at": run.created_at.isoformat() if run.created_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
    }
    rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    snapshot["cost_usd"] = run_cost(run.model, rows)
    budget = await rt.budgets.find(run.id)
    snapshot["budget"] = budget.to_json() if budget is not None else None
    if run.status in TERMINAL:
        answer = last_substantive_text(rows)
        if len(answer) > ANSWER_CAP:
            answer = (
                answer[:ANSWER_CAP] + f"\n[… {len(answer) - ANSWER_CAP:,} more characters; the "
                f"whole answer is in conversation {run.conversation_id}]"
            )
        snapshot["answer"] = answer
    return snapshot


def run_cost(model: str, rows: Sequence[TimelineRow]) -> float | None:
    """What the run's model turns cost (genai-prices), or None when the model has no known
    price: a cost is never guessed."""
    total = 0.0
    for row in rows:
        if row.kind != "model_turn":
            continue
        usage = row.data.get("usage") or {}
        cost = cost_usd(model, int(usage.get("input") or 0), int(usage.get("output") or 0))
        if cost is None:
            return None
        total += cost
    return round(total, 6)


async def wait_settled(rt: RunHost, run_id: str, seconds: float, *, lend: bool) -> RunRecord:
    """The run once it ends or parks, or as it stands after ``seconds``.

    ``lend``: the caller is itself a run's job, whose slot the awaited run may use."""
    if seconds <= 0:
        return await rt.runs.get(run_id)
    try:
        if lend:
            async with rt.jobs.lending():
                return await asyncio.wait_for(rt.wait_run(run_id), seconds)
        return await asyncio.wait_for(rt.wait_run(run_id), seconds)
    except TimeoutError:
        return await rt.runs.get(run_id)
