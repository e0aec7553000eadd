"""Forking a conversation: a new one from a step of another, files optional."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.server.deps import CallerDep, PlatformDep

router = APIRouter(tags=["conversations"])


class Fork(BaseModel):
    at: str = Field(
        min_length=1,
        max_length=100,
        description="The call to fork before: its call id, or a checkpoint step number.",
    )
    files_into: str | None = Field(
        default=None,
        max_length=4096,
        description="A new folder (URI, e.g. data://fork) for the files as they were then.",
    )


@router.post("/conversations/{conversation_id}/fork", status_code=201)
async def fork_conversation(
    conversation_id: str, body: Fork, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """A new conversation of yours with the history the model had seen before call ``at``
    (nothing is run again), and with ``files_into`` the files as they were then."""
    outcome = await platform.fork(
        conversation_id, body.at, user=caller.user_id, files_into=body.files_into
    )
    return outcome.to_json()
