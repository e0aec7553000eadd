"""Corral's own tools served over MCP: the caller's visible tools, each call through the one
dispatch pipeline as that caller, in a conversation of the caller's own.

Each MCP session is a conversation of its user, created on the session's first tool call, so
``todos`` keeps the session's goal and list, a background shell reports into it, and a call
that needs approval is parked under it as in a chat. A call that needs approval is not held
open: it returns at once with the approval's id (``structuredContent.status = "pending"``)
and the conversation's (``conversationId``); a person decides it with ``corral approvals
decide`` or the HTTP API. Every refusal (``invalid_arguments``, ``not_visible``…) comes back
as an error result whose text starts with its code.

Tools that need a run the model drives (:data:`NOT_OVER_MCP`) are not listed: an MCP
client is its own agent loop, so nothing could answer ``ask_question`` into it, a delegate
could not report back, and ``compact_history`` would have no history to trim (the calls an
MCP client makes are not turns of the conversation).

Who calls is asked per request (:data:`Who`): stdio serves one fixed user, the HTTP endpoint
(:mod:`corral.server.mcp_http`) the user its bearer token belongs to.

A stdio session is a session in Claude Code's sense: it ends when the client closes the
stream, and the operator's ``SessionEnd`` hooks hear it (``reason`` ``other``; the
session's id is ``mcp-`` and a random part). A streamable-HTTP session ends when the client
deletes it, it stays idle too long or the server stops; its SessionEnd carries its
``Mcp-Session-Id`` (see :mod:`corral.server.mcp_http`). A conversation never ends (it has
no delete or archive), so no other SessionEnd fires.
"""

from __future__ import annotations

import base64
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    AudioContent,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
)

from corral.platform import Platform
from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.tools.narrowing import Narrowing
from corral.tools.registry import LoadedTool
from corral.tools.results import AudioBlock, ImageBlock, ResourceBlock, ToolResult

__all__ = [
    "NOT_OVER_MCP",
    "SessionKey",
    "Who",
    "build_mcp_server",
    "serve_stdio",
    "session_ended",
]

Who = Callable[[Any], Awaitable[tuple[Caller, Profile]]]
"""From a request's context, the caller to act as (resolved once per request, with its
current rights) and the profile of its calls."""

NOT_OVER_MCP = frozenset({"ask_question", "delegate", "compact_history"})
"""Tools that only work inside a run the platform's model drives."""

SessionKey = Callable[[Any], str | None]
"""From a request's context, the MCP session it belongs to (None: a call without one)."""

_OVER_MCP = Narrowing(blocked_tools=NOT_OVER_MCP)
_SESSIONS_KEPT = 4096


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


def _content(result: ToolResult) -> list[ContentBlock]:
    """The result's blocks as MCP content: images and audio as themselves, a resource as a
    link to its address; a refusal or a pending call as its one explaining text."""
    if result.is_error or result.waiting is not None or not result.content:
        return [TextContent(text=result.text)]
    blocks: list[ContentBlock] = []
    for block in result.content:
        if isinstance(block, ImageBlock):
            data = base64.b64encode(block.data).decode("ascii")
            blocks.append(ImageContent(data=data, mime_type=block.media_type))
        elif isinstance(block, AudioBlock):
            data = base64.b64encode(block.data).decode("ascii")
            blocks.append(AudioContent(data=data, mime_type=block.media_type))
        elif isinstance(block, ResourceBlock):
            name = block.title or block.uri.rsplit("/", 1)[-1] or block.uri
            blocks.append(ResourceLink(name=name, uri=block.uri, mime_type=block.media_type))
        else:
            blocks.append(TextContent(text=block.text))
    return blocks


class _SessionConversations:
    """The conversation of each MCP session, created on its first tool call.

    Sessions are known by their key (:data:`SessionKey`); the most recent
    :data:`_SESSIONS_KEPT` are remembered, an older one starts a new conversation."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._ids: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def of(self, session: str | None, caller: Caller) -> str:
        if session is None:
            return await self._create(caller)
        key = (caller.user_id, session)
        found = self._ids.get(key)
        if found is None:
            created = await self._create(caller)
            # Two first calls of one session may race: the first stored wins.
            found = self._ids.setdefault(key, created)
        self._ids.move_to_end(key)
        while len(self._ids) > _SESSIONS_KEPT:
            self._ids.popitem(last=False)
        return found

    async def _create(self, caller: Caller) -> str:
        created = await self._platform.runtime.start_conversation(
            caller=caller, title="MCP session"
        )
        return created.id


def build_mcp_server(platform: Platform, who: Who, session_of: SessionKey) -> Server[Any]:
    """An MCP server whose tools are the caller's visible tools, called under its profile,
    each session's calls in a conversation of its own."""
    conversations = _SessionConversations(platform)

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        caller, _ = await who(ctx)
        visible = await platform.visible_tools(caller=caller, narrowing=_OVER_MCP)
        return ListToolsResult(tools=[_tool(t) for t in sorted(visible, key=lambda t: t.name)])

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        caller, profile = await who(ctx)
        conversation_id = await conversations.of(session_of(ctx), caller)
        result = await platform.call_tool(
            params.name,
            params.arguments or {},
            caller=caller,
            profile=profile,
            conversation_id=conversation_id,
            narrowing=_OVER_MCP,
        )
        structured: dict[str, Any] = {"status": result.status}
        if result.error_code:
            structured["code"] = result.error_code
        if result.waiting is not None:
            structured |= {
                "status": "pending",
                "approvalId": result.waiting.id,
                "conversationId": conversation_id,
            }
        return CallToolResult(
            content=_content(result),
            structured_content=structured,
            is_error=result.is_error and result.waiting is None,
        )

    return Server("corral", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(platform: Platform, *, user: str | None, profile: Profile) -> None:
    """Serve over this process's stdin/stdout until the client closes them."""

    async def fixed(ctx: Any) -> tuple[Caller, Profile]:
        return await platform.caller(user), profile

    # One process serves one client: the whole stdio connection is one session.
    server = build_mcp_server(platform, fixed, lambda ctx: "stdio")
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await session_ended(platform, f"mcp-{secrets.token_hex(6)}")


async def session_ended(platform: Platform, session_id: str) -> None:
    """SessionEnd hooks: what they answer changes nothing (the session is over)."""
    hooks = platform.hooks
    if hooks.configured:
        await hooks.run("SessionEnd", {"session_id": session_id, "reason": "other"})
