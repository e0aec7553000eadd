"""Corral's own tools served over MCP: the caller's visible tools, each call through the one
dispatch pipeline as that caller.

Tools are listed with their schemas and MCP annotations exactly as the pipeline would show
them to this caller. A call that needs approval is not held open: it returns at once with
the approval's id (``structuredContent.status = "pending"``); a person decides it with
``corral approvals decide``. Every refusal (``invalid_arguments``, ``not_visible``…) comes
back as an error result whose text starts with its code.

Who calls is asked per request (:data:`Who`): stdio serves one fixed user, the HTTP endpoint
(:mod:`corral.server.mcp_http`) the user its bearer token belongs to.

A stdio session is a session in Claude Code's sense: it ends when the client closes the
stream, and the operator's ``SessionEnd`` hooks hear it (``reason`` ``other``; the
session's id is ``mcp-`` and a random part). A conversation never ends (it has no delete
or archive), so no other SessionEnd fires.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from corral.platform import Platform
from corral.policy.profiles import Profile
from corral.tools.registry import LoadedTool

__all__ = ["Who", "build_mcp_server", "serve_stdio"]

Who = Callable[[Any], Awaitable[tuple[str | None, Profile]]]
"""From a request's context, the user id to act as and the profile of its calls."""


def _tool(loaded: LoadedTool) -> Tool:
    hints = loaded.spec.annotations
    return Tool(
        name=loaded.name,
        title=hints.title,
        description=loaded.spec.description,
        input_schema=loaded.spec.input_schema,
        annotations=ToolAnnotations(
            title=hints.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        ),
    )


def build_mcp_server(platform: Platform, who: Who) -> Server[Any]:
    """An MCP server whose tools are the caller's visible tools, called under its profile."""

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        user, _ = await who(ctx)
        visible = await platform.visible_tools(user=user)
        return ListToolsResult(tools=[_tool(t) for t in sorted(visible, key=lambda t: t.name)])

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        user, profile = await who(ctx)
        result = await platform.call_tool(
            params.name, params.arguments or {}, user=user, profile=profile
        )
        structured: dict[str, Any] = {"status": result.status}
        if result.error_code:
            structured["code"] = result.error_code
        if result.waiting is not None:
            structured |= {"status": "pending", "approvalId": result.waiting.id}
        return CallToolResult(
            content=[TextContent(text=result.text)],
            structured_content=structured,
            is_error=result.is_error and result.waiting is None,
        )

    return Server("corral", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(platform: Platform, *, user: str | None, profile: Profile) -> None:
    """Serve over this process's stdin/stdout until the client closes them."""

    async def fixed(ctx: Any) -> tuple[str | None, Profile]:
        return user, profile

    server = build_mcp_server(platform, fixed)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await _session_ended(platform, f"mcp-{secrets.token_hex(6)}")


async def _session_ended(platform: Platform, session_id: str) -> None:
    """SessionEnd hooks: what they answer changes nothing (the session is over)."""
    hooks = platform.hooks
    if hooks.configured:
        await hooks.run("SessionEnd", {"session_id": session_id, "reason": "other"})
