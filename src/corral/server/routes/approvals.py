"""Pending approvals: list and decide."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep

router = APIRouter(prefix="/approvals", tags=["approvals"])


class DecisionBody(BaseModel):
    decision: Literal["approve", "deny"] = Field(description="approve runs the call; deny refuses")
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


@router.post("/{approval_id}/decision", dependencies=[PERSON_ONLY])
async def decide(
    approval_id: str, body: DecisionBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    result = await platform.decide_approval(
        approval_id,
        body.decision,
        note=body.note,
        user=caller.user_id,
        remember=body.remember,
        scope=body.scope,
    )
    return {"approval_id": approval_id, "decision": body.decision, "result": result.to_json()}
