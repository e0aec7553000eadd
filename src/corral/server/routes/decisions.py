"""``/decisions``: every decision a run waits on the caller for (approvals, questions…)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from corral.errors import NotFound
from corral.server.deps import CallerDep, PlatformDep

router = APIRouter(prefix="/decisions", tags=["decisions"])


@router.get("")
async def list_decisions(
    platform: PlatformDep,
    caller: CallerDep,
    status: Literal["pending", "decided", "expired", "closed", "all"] = Query(
        default="pending", description="Which ones: pending (default), …, or all."
    ),
) -> dict[str, Any]:
    """Your decisions, oldest first; answer an approval at ``POST /approvals/{id}/decision``,
    a question at ``POST /questions/{id}/answer``."""
    chosen = None if status == "all" else status
    return {"decisions": await platform.inbox(user=caller.user_id, status=chosen)}


@router.get("/{decision_id}")
async def show_decision(
    decision_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """One decision of yours: who answered, from where and when, or its expiry."""
    record = await platform.decisions.get(decision_id)
    if record.user_id != caller.user_id:
        raise NotFound(f"no decision {decision_id!r}; GET /decisions lists yours")
    days = float((await platform.live_settings())["decisions_expire_days"])
    return record.to_json(default_days=days)
