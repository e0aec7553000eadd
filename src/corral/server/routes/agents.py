"""Agents' tool access: show it, switch one tool off or on, set or clear a custom allowlist.

The same operations as ``corral agents tool|only|all`` (and the manage-agents skill's
scripts). A selection only narrows: it never widens past enabled packages or the caller's
feature grants. Reading needs an authenticated caller; changing needs ``admin.settings``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.errors import NotFound
from corral.server.deps import CallerDep, PlatformDep, require_feature

router = APIRouter(prefix="/agents", tags=["agents"])

_WRITE = "admin.settings"


class ToolSwitch(BaseModel):
    enabled: bool = Field(description="true switches the tool on, false switches it off.")


class Pins(BaseModel):
    tools: list[str] = Field(
        description="Tools always given in full, never deferred by tool search ([]: none)."
    )


class Allowlist(BaseModel):
    tools: list[str] = Field(
        min_length=1, description="Exactly the tools the agent may use (custom mode)."
    )


async def _access(platform: PlatformDep, caller: CallerDep, agent: str) -> dict[str, Any]:
    state = await platform.config.dispatch_state()
    selection = state.agents.get(agent)
    if selection is None:
        raise NotFound(f"no agent {agent!r}; `corral agents list` shows them")
    visible = {t.name for t in await platform.visible_tools(caller=caller, agent=agent)}
    tools = []
    for name, tool in sorted(platform.registry.tools.items()):
        refusal = selection.refusal(tool)
        tools.append(
            {
                "name": name,
                "package": tool.package,
                "selected": refusal is None,
                "visible_to_you": name in visible,
            }
        )
    return {
        "agent": agent,
        "mode": selection.mode,
        "tools_off": sorted(selection.tools_off),
        "allowlist": sorted(selection.allowlist),
        "pinned_tools": await platform.admin.pinned_tools(agent),
        "tools": tools,
    }


@router.get("/{agent}/tools")
async def tool_access(agent: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """The agent's mode (all or custom), what it switched off or allows, and every tool."""
    return await _access(platform, caller, agent)


@router.put("/{agent}/tools/{tool}")
async def switch_tool(
    agent: str, tool: str, body: ToolSwitch, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Switch one tool on or off without leaving the agent's mode."""
    require_feature(caller, _WRITE)
    await platform.admin.set_tool_enabled(agent, tool, body.enabled)
    return await _access(platform, caller, agent)


@router.put("/{agent}/allowlist")
async def set_allowlist(
    agent: str, body: Allowlist, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Leave all mode: freeze exactly these tools as the agent's allowlist."""
    require_feature(caller, _WRITE)
    await platform.admin.set_custom_tools(agent, body.tools)
    return await _access(platform, caller, agent)


@router.put("/{agent}/pinned")
async def set_pinned(
    agent: str, body: Pins, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Pin tools: given in full every step, never deferred by tool search."""
    require_feature(caller, _WRITE)
    await platform.admin.set_pinned_tools(agent, body.tools)
    return await _access(platform, caller, agent)


@router.delete("/{agent}/allowlist")
async def clear_allowlist(agent: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """Back to all mode: every visible tool, none switched off."""
    require_feature(caller, _WRITE)
    await platform.admin.set_all_tools(agent)
    return await _access(platform, caller, agent)
