"""Tool listing and tool calls."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from corral.server.deps import CallerDep, PersonDep, PlatformDep, platform_of

router = APIRouter(prefix="/tools", tags=["tools"])


class ToolCall(BaseModel):
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments.")
    agent: str | None = Field(default=None, description="Agent to call as (default agent).")
    profile: str = Field(default="balanced", description="safe, balanced or auto.")


@router.get("")
async def list_tools(
    platform: PlatformDep, caller: CallerDep, agent: str | None = None
) -> dict[str, Any]:
    """The tools visible to the caller (and agent), with their full schemas."""
    visible = await platform.visible_tools(caller=caller, agent=agent)
    return {
        "tools": [
            {
                **tool.spec.model_schema(),
                "package": tool.package,
                "annotations": tool.spec.annotations.to_json(),
            }
            for tool in visible
        ]
    }


@router.post("/{name}/call")
async def call_tool(
    name: str, body: ToolCall, request: Request, caller: PersonDep
) -> dict[str, Any]:
    """Call a tool through the dispatch pipeline; errors come back as results, not 4xx.
    A session ticket is refused: a person calls tools here."""
    result = await platform_of(request).call_tool(
        name, body.arguments, caller=caller, agent=body.agent, profile=body.profile
    )
    return result.to_json()
