"""A conversation's checkpoints, rewind previews and rewinds (``corral rewind`` over HTTP).

A rewind refused on conflicts answers 409 with the conflicts (``code: "conflicts"``); one
refused because a run of the conversation is running or parked answers 409 too
(``code: "conversation_busy"``); files the caller may not write 403; a conversation the
caller may not see 404, as elsewhere."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from corral.server.deps import CallerDep, PersonDep, PlatformDep

router = APIRouter(tags=["conversations"])

_TO = (
    "Where to go back to, the state before it: a step number (1 is the first call that "
    "changed files), a checkpoint id or any tool call id of the conversation."
)


class Rewind(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(min_length=1, max_length=200, description=_TO)
    files: bool = Field(default=True, description="Put the files back.")
    conversation: bool = Field(
        default=True, description="Hide the call's model turn and every later row from the model."
    )
    force: bool = Field(default=False, description="Overwrite files something else changed since.")


@router.get("/conversations/{conversation_id}/checkpoints")
async def list_checkpoints(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """The steps a rewind can go back before: the calls that changed files, oldest first."""
    steps = await platform.checkpoints(conversation_id, user=caller.user_id)
    return {"checkpoints": [s.to_json() for s in steps]}


@router.get("/conversations/{conversation_id}/rewind/preview")
async def preview_rewind(
    conversation_id: str,
    platform: PlatformDep,
    caller: CallerDep,
    to: Annotated[str, Query(min_length=1, max_length=200, description=_TO)],
    files: bool = True,
    conversation: bool = True,
) -> dict[str, Any]:
    """What the rewind would do: each path it would put back (a diff for text files), the
    conflicts, the rows it would hide, and ``blocked`` when it cannot be made now."""
    preview = await platform.rewind_preview(
        conversation_id, to, files=files, conversation=conversation, user=caller.user_id
    )
    return preview.to_json()


_REFUSED: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "Refused: files changed since by something else, or while another "
        "call ran on the same source (code conflicts, listed), or a run of the "
        "conversation running or parked (code conversation_busy)"
    }
}


@router.post("/conversations/{conversation_id}/rewind", response_model=None, responses=_REFUSED)
async def rewind(
    conversation_id: str, body: Rewind, platform: PlatformDep, caller: PersonDep
) -> dict[str, Any] | JSONResponse:
    """Rewind the files and/or the conversation to before ``to`` (a person only)."""
    result = await platform.rewind(
        conversation_id,
        body.to,
        files=body.files,
        conversation=body.conversation,
        force=body.force,
        user=caller.user_id,
    )
    shown = result.to_json()
    if result.refused:
        detail = (
            f"{len(result.conflicts)} path(s) were changed since by something else, or while "
            "another call ran on the same source; "
            "nothing was rewound (force overwrites them)"
        )
        return JSONResponse(
            {
                "detail": detail,
                "code": "conflicts",
                "conflicts": shown["conflicts"],
                "result": shown,
            },
            status_code=409,
        )
    return shown
