"""The header's "waiting for you" list: a count and links to the conversations where the
signed-in person's approvals and questions wait (:mod:`corral.server.ui.waiting_list`).

Every page loads it into its header and refreshes it every few seconds and, on a page with
a live stream, soon after each row the stream shows: cheap enough, and it also catches
decisions made in other processes, where this one sees no event."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from corral.server.ui.access import PageCaller, UiRoute
from corral.server.ui.render import templates
from corral.server.ui.waiting_list import waiting_for

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


@router.get("/waiting")
async def waiting_list(who: PageCaller) -> Response:
    waiting = await waiting_for(who)
    return HTMLResponse(templates.get_template("_waiting.html").render(waiting=waiting))
