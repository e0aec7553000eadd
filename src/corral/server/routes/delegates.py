"""Delegate runs: list a conversation's, show one, stop one, continue one. Routes, not tools.

Observation is a read; stopping and continuing are the two rare operations, open only to
the person who started the run.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.runtime.delegation import Delegation
from corral.server.deps import CallerDep, PlatformDep

router = APIRouter(tags=["delegates"])


class ContinueBody(BaseModel):
    message: str = Field(min_length=1, description="The further instruction for the subagent.")


@router.get("/conversations/{conversation_id}/delegates")
async def list_delegates(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """The delegate runs a conversation started, newest first."""
    found = await platform.services.require(Delegation).list_delegates(
        conversation_id, user=caller.user_id
    )
    return {"delegates": found}


@router.get("/delegates/{run_id}")
async def show_delegate(run_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return await platform.services.require(Delegation).show(run_id, user=caller.user_id)


@router.post("/delegates/{run_id}/stop")
async def stop_delegate(run_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """Stop the run and its children; it reports what it managed to do."""
    run = await platform.services.require(Delegation).stop(run_id, user=caller.user_id)
    return run.to_json()


@router.post("/delegates/{run_id}/continue")
async def continue_delegate(
    run_id: str, body: ContinueBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """A further instruction for an ended run; its answer reports into the conversation."""
    run = await platform.services.require(Delegation).continue_run(
        run_id, body.message, user=caller.user_id
    )
    return run.to_json()
