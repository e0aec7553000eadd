"""The header's "waiting for you" list: a count and links to the conversations where the
signed-in person's approvals and questions wait (:mod:`corral.server.ui.waiting_list`),
and, for a person paired in a chat, the switch that sends new ones there too
(``corral channels notify``).

Every page loads it into its header and refreshes it every few seconds and, on a page with
a live stream, soon after each row the stream shows: cheap enough, and it also catches
decisions made in other processes, where this one sees no event."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form
from fastapi.responses import HTMLResponse, Response

from corral.channels import Channels
from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf
from corral.server.ui.render import templates
from corral.server.ui.waiting_list import waiting_for

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


async def _fragment(who: SignedIn, *, notify: bool | None = None, opened: bool = False) -> str:
    channels = who.platform.services.get(Channels)
    chats: dict[str, Any] = {"notify": False, "paired_chats": []}
    if channels is not None:
        chats = await channels.notifications(who.user, notify)
    return templates.get_template("_waiting.html").render(
        waiting=await waiting_for(who), chats=chats, opened=opened
    )


@router.get("/waiting")
async def waiting_list(who: PageCaller) -> Response:
    return HTMLResponse(await _fragment(who))


@router.post("/notify")
async def set_notify(
    who: Annotated[SignedIn, Depends(require_csrf)],
    notify: Annotated[Literal["on", "off"], Form()],
) -> Response:
    """Send (or stop sending) the person's new pending decisions to their paired chats."""
    return HTMLResponse(await _fragment(who, notify=notify == "on", opened=True))
