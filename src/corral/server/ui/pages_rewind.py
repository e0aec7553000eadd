"""Rewind and fork from a tool call's card: the preview page (the files a rewind would put
back with a diff for text files, the conflicts, the rows it would hide from the model),
the rewind itself (files and conversation, files only, conversation only) and the fork.
Each calls the same platform method as the CLI and the API, as the signed-in user."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from corral.errors import PolicyDenied
from corral.platform.rewind import RewindPreview
from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf
from corral.server.ui.render import templates
from corral.server.ui.timeline import CallCard, TimelineView

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]

_MODES: dict[str, tuple[bool, bool]] = {
    "both": (True, True),
    "files": (True, False),
    "conversation": (False, True),
}
"""What each rewind button puts back: (files, conversation)."""


def _go(request: Request, url: str) -> Response:
    """Open ``url``: htmx follows ``HX-Redirect``; a plain form post gets a 303."""
    if request.headers.get("HX-Request"):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


async def _card(who: SignedIn, conversation_id: str, call_id: str) -> CallCard | None:
    rows = await who.platform.runtime.rows(conversation_id, user=who.user)
    return TimelineView.of(rows).calls.get(call_id)


@router.get("/c/{conversation_id}/rewind/{call_id}")
async def rewind_preview(conversation_id: str, call_id: str, who: PageCaller) -> Response:
    """What rewinding to before this call would do; nothing changes until a button is used."""
    platform = who.platform
    conversation = await platform.runtime.conversation(conversation_id, user=who.user)
    files_refused: str | None = None
    preview: RewindPreview
    try:
        preview = await platform.rewind_preview(conversation_id, call_id, user=who.user)
    except PolicyDenied as exc:  # files one may not write: the conversation part still can
        files_refused = str(exc)
        preview = await platform.rewind_preview(
            conversation_id, call_id, files=False, user=who.user
        )
    html = templates.get_template("rewind.html").render(
        who=who,
        conversation=conversation,
        conversation_id=conversation_id,
        card=await _card(who, conversation_id, call_id),
        call_id=call_id,
        preview=preview,
        files_refused=files_refused,
        tab="chat",
    )
    return HTMLResponse(html)


@router.post("/c/{conversation_id}/rewind/{call_id}")
async def rewind(
    request: Request,
    conversation_id: str,
    call_id: str,
    who: Acting,
    mode: Annotated[Literal["both", "files", "conversation"], Form()] = "both",
    force: Annotated[bool, Form()] = False,
) -> Response:
    files, conversation = _MODES[mode]
    done = await who.platform.rewind(
        conversation_id,
        call_id,
        files=files,
        conversation=conversation,
        force=force,
        user=who.user,
    )
    if done.refused:
        html = templates.get_template("_rewind_refused.html").render(result=done)
        return HTMLResponse(html, status_code=409)
    return _go(request, f"/ui/c/{conversation_id}")


@router.post("/c/{conversation_id}/fork/{call_id}")
async def fork(
    request: Request,
    conversation_id: str,
    call_id: str,
    who: Acting,
    files_into: Annotated[str, Form()] = "",
) -> Response:
    """A new conversation from before this call (the files too, into a new folder, when
    one is named); it opens at once."""
    made = await who.platform.fork(
        conversation_id, call_id, user=who.user, files_into=files_into.strip() or None
    )
    return _go(request, f"/ui/c/{made.conversation.id}")
