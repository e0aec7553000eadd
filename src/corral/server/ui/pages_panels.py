"""Panels outside a conversation: Tool Access per agent, live Settings (admins) and
Workflows. They call the platform's own methods (the kernel's admin, the workflows service)
and its own checks; the UI adds no rules. Changing tool access or settings needs
``admin.settings``, as the API's settings routes do."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from corral.live_settings import LIVE_SETTINGS
from corral.runtime.workflows import Workflows
from corral.runtime.workflows.render import describe_setup
from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf
from corral.server.ui.render import templates
from corral.tools.selection import AgentSelection

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]


def _page(name: str, who: SignedIn, **values: Any) -> Response:
    return HTMLResponse(templates.get_template(name).render(who=who, **values))


def _need_admin(who: SignedIn) -> None:
    if not who.is_admin:
        raise HTTPException(
            403, f"this needs feature 'admin.settings', which role {who.caller.role!r} lacks"
        )


@router.get("/agents")
async def tool_access(who: PageCaller, agent: str = "default") -> Response:
    """The agent's tool selection: all mode with switches, or its frozen custom list."""
    platform = who.platform
    snapshot = await platform.kernel.config.snapshot()
    state = snapshot.state
    selection = state.agents.get(agent) or AgentSelection(agent=agent, mode="all")
    tools = []
    for name, loaded in sorted(platform.registry.tools.items()):
        missing = [f for f in loaded.spec.features if not who.caller.grants.has(f)]
        tools.append(
            {
                "name": name,
                "package": loaded.package,
                "on": selection.refusal(loaded) is None,
                "hidden_by_grant": missing,
                "package_off": loaded.package in state.disabled_packages,
            }
        )
    packages = sorted({loaded.package for loaded in platform.registry.tools.values()})
    return _page(
        "tool_access.html",
        who,
        agent=agent,
        agents=sorted(state.agents) or ["default"],
        selection=selection,
        tools=tools,
        packages=packages,
        disabled=state.disabled_packages,
    )


@router.post("/agents/{agent}/tools/{tool}")
async def switch_tool(
    agent: str, tool: str, who: Acting, enabled: Annotated[bool, Form()]
) -> Response:
    """One switch. In the list view an untick leaves all mode: the list freezes as custom."""
    _need_admin(who)
    await who.platform.kernel.admin.set_tool_enabled(agent, tool, enabled)
    return RedirectResponse(f"/ui/agents?agent={agent}", status_code=303)


@router.post("/agents/{agent}/mode")
async def set_mode(
    agent: str, who: Acting, mode: Annotated[str, Form()], tools: Annotated[list[str], Form()]
) -> Response:
    """``all`` returns to all mode; ``custom`` freezes exactly the ticked tools."""
    _need_admin(who)
    admin = who.platform.kernel.admin
    if mode == "all":
        await admin.set_all_tools(agent)
    else:
        await admin.set_custom_tools(agent, [t for t in tools if t])
    return RedirectResponse(f"/ui/agents?agent={agent}", status_code=303)


@router.post("/packages/{package}")
async def switch_package(
    package: str, who: Acting, enabled: Annotated[bool, Form()], agent: Annotated[str, Form()]
) -> Response:
    _need_admin(who)
    await who.platform.kernel.admin.set_package_enabled(package, enabled)
    return RedirectResponse(f"/ui/agents?agent={agent}", status_code=303)


@router.get("/settings")
async def settings_page(who: PageCaller, message: str = "") -> Response:
    _need_admin(who)
    values = {
        key: json.dumps(value) if isinstance(value, dict) else value  # edited as JSON
        for key, value in (await who.platform.live_settings()).items()
    }
    return _page("settings.html", who, values=values, definitions=LIVE_SETTINGS, message=message)


@router.post("/settings/{key}")
async def change_setting(
    key: str, request: Request, who: Acting, value: Annotated[list[str], Form()]
) -> Response:
    """Validated exactly as the API's ``PUT /settings/live/{key}``. A checkbox sends a hidden
    ``false`` and, when ticked, ``true`` after it: the last value is the one meant."""
    _need_admin(who)
    await who.platform.kernel.admin.set_live(key, value[-1], by=who.user)
    if request.headers.get("HX-Request"):
        return HTMLResponse("Saved.")
    return RedirectResponse(f"/ui/settings?message=saved+{key}", status_code=303)


@router.get("/workflows")
async def workflows_page(who: PageCaller) -> Response:
    service = who.platform.services.require(Workflows)
    found = await service.visible(who.caller)
    return _page("workflows.html", who, workflows=found)


@router.get("/workflows/{workflow_id}")
async def workflow_page(workflow_id: str, who: PageCaller) -> Response:
    service = who.platform.services.require(Workflows)
    workflow = await service.readable(workflow_id, who.caller)
    setup = await describe_setup(service, workflow)
    runs = await service.runs(workflow_id, who.caller)
    # A run's conversation is its owner's: a sharee would only meet a 404 behind the link.
    transcripts = who.caller.user_id == workflow.owner_id or who.caller.grants.has(
        "conversations.manage"
    )
    return _page(
        "workflow.html", who, workflow=workflow, setup=setup, runs=runs, transcripts=transcripts
    )
