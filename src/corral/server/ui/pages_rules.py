"""The Rules page: every permission rule in force for the caller, where it came from (a rule
file and line, or who remembered it from which approval), rule files that could not be used,
and Remove for a remembered rule. It calls the platform's own rule methods, so who may remove
what is theirs: one's own rules, and an admin's the project's too."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf
from corral.server.ui.render import templates

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]


@router.get("/rules")
async def rules_page(who: PageCaller, message: str = "") -> Response:
    rules = await who.platform.rules.listing(who.caller)
    html = templates.get_template("rules.html").render(
        who=who,
        rules=[rule.to_json() | {"shown": rule.show()} for rule in rules],
        problems=who.platform.rules.problems(),
        message=message,
    )
    return HTMLResponse(html)


@router.post("/rules/{rule_id}/remove")
async def remove_rule(rule_id: str, who: Acting) -> Response:
    await who.platform.rules.remove(rule_id, who.caller)
    return RedirectResponse(f"/ui/rules?message={quote(f'removed {rule_id}')}", status_code=303)
