"""Pending approvals: list and decide."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from corral.errors import NotFound
from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep

router = APIRouter(prefix="/approvals", tags=["approvals"])


class DecisionBody(BaseModel):
    decision: Literal["approve", "deny"] = Field(
        description="approve: the call runs after the answer (in its run's job); deny refuses"
    )
    note: str | None = Field(default=None, description="Shown to the agent with the decision.")
    remember: Literal["exact", "family"] | None = Field(
        default=None,
        description="Keep the answer as permission rules: the exact commands, or their "
        "families (the prefixes the analysis proposes); a denial is kept as forbidden.",
    )
    scope: Literal["agent", "user", "project"] = Field(
        default="agent",
        description="Whom remembered rules cover: this agent, all your agents, or (admins) "
        "the project.",
    )


@router.get("")
async def list_approvals(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    records = await platform.pending_approvals(user=caller.user_id)
    return {
        "approvals": [
            {**r.to_json(), "remember": await platform.rules.proposal(r)} for r in records
        ]
    }


@router.get("/{approval_id}")
async def show_approval(
    approval_id: str,
    platform: PlatformDep,
    caller: CallerDep,
    wait: float = Query(
        default=0,
        ge=0,
        le=60,
        description="Seconds to wait for an approved call's result (its run settling, or "
        "a call outside any run ending) before answering.",
    ),
) -> dict[str, Any]:
    """One approval of yours, with its result once the approved call ran."""
    record = await platform.approvals.get(approval_id)
    if record.user_id != caller.user_id:
        raise NotFound(f"no approval {approval_id!r}; GET /approvals lists yours")
    if wait and record.status == "approved" and record.result is None:
        try:
            async with asyncio.timeout(wait):
                if record.run_id is not None:
                    await platform.runtime.wait_run(record.run_id)
                else:
                    await platform.approval_result(approval_id)
        except TimeoutError:
            pass  # answered as it stands
        record = await platform.approvals.get(approval_id)
    return record.to_json()


@router.post("/{approval_id}/decision", dependencies=[PERSON_ONLY])
async def decide(
    approval_id: str, body: DecisionBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    result = await platform.decide_approval(
        approval_id,
        body.decision,
        surface="http",
        note=body.note,
        user=caller.user_id,
        remember=body.remember,
        scope=body.scope,
    )
    return {"approval_id": approval_id, "decision": body.decision, "result": result.to_json()}
