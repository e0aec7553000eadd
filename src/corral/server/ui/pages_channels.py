"""The Channels panel: the caller's channel connections and the pending pairing codes, with
Approve (choosing the user the sender maps to) and Reject.

It needs feature ``channels.connect`` as the API's channel routes do, and calls the same
methods they call (the channels service's ``check`` and its pairing decisions), so the
rules are the service's: a member maps a sender only to themselves, and decides only the
codes of channels they own. No token or secret value is ever rendered.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from corral.channels import ChannelKind, Channels
from corral.channels.pairing import ADMIN
from corral.server.deps import require_feature
from corral.server.routes.channels import FEATURE
from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf
from corral.server.ui.render import templates

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]


async def _connections(who: SignedIn) -> list[dict[str, Any]]:
    """The connections the caller owns (all of them for administrators), each with the
    projection ``GET /channels/{name}`` gives."""
    kind = who.platform.services.require(ChannelKind)
    listed = await kind.list(who.caller)
    admin = who.caller.grants.has(ADMIN)
    rows = []
    for row in listed["rows"]:
        if row["mine"] or admin:
            state = await kind.channels.check(row["name"])
            rows.append({"name": row["name"], "mine": row["mine"], **state})
    return rows


def _back(message: str) -> Response:
    return RedirectResponse(f"/ui/channels?message={quote(message)}", status_code=303)


@router.get("/channels")
async def channels_page(who: PageCaller, message: str = "") -> Response:
    """Connections with their state, last inbound and last error; pending pairing codes."""
    require_feature(who.caller, FEATURE)
    pending = await who.platform.services.require(Channels).pairing.pairings(who.caller)
    html = templates.get_template("channels.html").render(
        who=who,
        connections=await _connections(who),
        pairings=pending,
        may_map_others=who.caller.grants.has(ADMIN),
        message=message,
    )
    return HTMLResponse(html)


@router.post("/channels/pairing/{code}/approve")
async def approve(code: str, who: Acting, user: Annotated[str, Form()] = "") -> Response:
    """Approve ``code``, mapping its sender to ``user`` (empty: the caller)."""
    require_feature(who.caller, FEATURE)
    pairing = who.platform.services.require(Channels).pairing
    sender = await pairing.approve(code, who.caller, user=user.strip() or None)
    return _back(f"approved {sender.sender_name or sender.sender_id}")


@router.post("/channels/pairing/{code}/reject")
async def reject(code: str, who: Acting) -> Response:
    require_feature(who.caller, FEATURE)
    sender = await who.platform.services.require(Channels).pairing.reject(code, who.caller)
    return _back(f"rejected {sender.sender_name or sender.sender_id}")
