"""Corral's own tools served over MCP: the caller's visible tools, each call through the one
dispatch pipeline as that caller, in a conversation of the caller's own.

Each MCP session is a conversation of its user, created on the session's first tool call, so
``todos`` keeps the session's goal and list, a background shell reports into it, and a call
that needs approval is parked under it as in a chat. When the client can elicit, its user is
asked there and the call finishes in the same ``tools/call``
(:mod:`corral.server.mcp_approval`). Otherwise a call that needs approval is not held open: it
returns at once with the approval's id (``structuredContent.status = "pending"``) and the
conversation's (``conversationId``), and for a command what remembering the answer would
allow (``remember``: ``{"family": [...], "exact": [...]}``); a person decides it with
``corral approvals decide`` (``--remember family``) or the HTTP API. Every refusal
(``invalid_arguments``, ``not_visible``…) comes back as an error result whose text starts
with its code.

Tools that need a run the model drives (:data:`NOT_OVER_MCP`) are not listed: an MCP
client is its own agent loop, so nothing could answer ``ask_question`` into it, a delegate
could not report back, and ``compact_history`` would have no history to trim (the calls an
MCP client makes are not turns of the conversation); ``tool_search`` loads tools into a
model's next step, and an MCP client already lists them all.

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
import logging
import secrets
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import (
    INVALID_PARAMS,
    AudioContent,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    ContentBlock,
    EmbeddedResource,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceLink,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
    UnsubscribeRequestParams,
)

from corral.errors import NotFound
from corral.platform import Platform
from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.server.mcp_approval import (
    answer_from_retry,
    approval_input_request,
    ask_for_approval,
    wants_input_required,
)
from corral.server.mcp_live import LiveRelay, log_levels
from corral.server.mcp_offers import Contents, OfferError, Offers, load_offers
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

NOT_OVER_MCP = frozenset({"ask_question", "delegate", "compact_history", "tool_search"})
"""Tools that only work inside a run the platform's model drives."""

SessionKey = Callable[[Any], str | None]
"""From a request's context, the MCP session it belongs to (None: a call without one)."""

_log = logging.getLogger(__name__)
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


def _content(result: ToolResult, embed: Callable[[str], Contents | None]) -> list[ContentBlock]:
    """The result's blocks as MCP content: images and audio as themselves, a resource as its
    contents when a package offers it over MCP (``embed``), else as a link to its address; a
    refusal or a pending call as its one explaining text."""
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
            contents = embed(block.uri)
            if contents is not None:
                blocks.append(EmbeddedResource(resource=contents))
                continue
            name = block.title or block.uri.rsplit("/", 1)[-1] or block.uri
            blocks.append(ResourceLink(name=name, uri=block.uri, mime_type=block.media_type))
        else:
            blocks.append(TextContent(text=block.text))
    return blocks


def _progress_token(ctx: Any) -> str | int | None:
    meta = getattr(ctx, "meta", None) or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    return token if isinstance(token, str | int) else None


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
    each session's calls in a conversation of its own; its resources and prompts are those
    the packages of those tools declare (:mod:`corral.server.mcp_offers`)."""
    conversations = _SessionConversations(platform)
    declared = _declared_offers(platform)
    set_levels: dict[str | None, str] = {}

    async def offers_for(ctx: Any, caller: Caller | None = None) -> list[Offers]:
        if caller is None:
            caller, _ = await who(ctx)
        visible = await platform.visible_tools(caller=caller, narrowing=_OVER_MCP)
        packages = {t.package for t in visible}
        return [o for name, o in sorted(declared.items()) if name in packages]

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        caller, _ = await who(ctx)
        visible = await platform.visible_tools(caller=caller, narrowing=_OVER_MCP)
        return ListToolsResult(tools=[_tool(t) for t in sorted(visible, key=lambda t: t.name)])

    async def call_tool(
        ctx: Any, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        caller, profile = await who(ctx)
        session = session_of(ctx)
        if params.request_state:  # the retry carrying the answer to the approval question
            return await answered_call(ctx, caller, params)
        conversation_id = await conversations.of(session, caller)
        relay = LiveRelay(
            ctx.session,
            tool=params.name,
            progress_token=_progress_token(ctx),
            request_id=getattr(ctx, "request_id", None),
            levels=log_levels(ctx, set_levels.get(session)),
        )
        async with relay.running():
            result = await platform.call_tool(
                params.name,
                params.arguments or {},
                caller=caller,
                profile=profile,
                conversation_id=conversation_id,
                narrowing=_OVER_MCP,
                output=relay.sink,
            )
        if result.waiting is not None and result.waiting.kind == "approval":
            if wants_input_required(ctx.session):
                return await approval_input_request(platform, result.waiting.id)
            decided = await ask_for_approval(
                platform, ctx.session, getattr(ctx, "request_id", None), caller, result.waiting.id
            )
            result = decided if decided is not None else result
        return await answer(ctx, caller, result, conversation_id)

    async def answered_call(
        ctx: Any, caller: Caller, params: CallToolRequestParams
    ) -> CallToolResult:
        approval_id = str(params.request_state)
        try:
            record = await platform.approvals.get(approval_id)
        except NotFound as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        if record.user_id != caller.user_id or record.tool != params.name:
            raise MCPError(INVALID_PARAMS, f"no approval {approval_id!r} for this call")
        result = await answer_from_retry(platform, caller, approval_id, params.input_responses)
        if result is None:
            result = ToolResult.wait_for(
                "approval",
                approval_id,
                f"Waiting for approval {approval_id}: the MCP client's answer made no "
                "decision; decide it with `corral approvals decide` or the HTTP API.",
                error_code="approval_pending",
            )
        return await answer(ctx, caller, result, record.conversation_id or "")

    async def answer(
        ctx: Any, caller: Caller, result: ToolResult, conversation_id: str
    ) -> CallToolResult:
        # The packages' offers are looked up only for a result that has a resource to embed.
        has_resource = any(isinstance(b, ResourceBlock) for b in result.content or ())
        offered = await offers_for(ctx, caller) if has_resource else []
        structured: dict[str, Any] = {"status": result.status}
        if result.error_code:
            structured["code"] = result.error_code
        if result.waiting is not None:
            structured |= {
                "status": "pending",
                "approvalId": result.waiting.id,
                "conversationId": conversation_id,
                "remember": await _proposal(platform, result.waiting.kind, result.waiting.id),
            }
        return CallToolResult(
            content=_content(result, lambda uri: _read(offered, uri)),
            structured_content=structured,
            is_error=result.is_error and result.waiting is None,
        )

    async def list_resources(
        ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        offered = await offers_for(ctx)
        return ListResourcesResult(resources=[r for o in offered for r in o.listed_resources()])

    async def list_templates(
        ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        offered = await offers_for(ctx)
        templates = [t for o in offered for t in o.listed_templates()]
        return ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        contents = _read(await offers_for(ctx), str(params.uri))
        if contents is None:
            raise MCPError(
                INVALID_PARAMS, f"no resource {params.uri}; list them with resources/list"
            )
        return ReadResourceResult(contents=[contents])

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        # Declared resources never change, so a subscription never has an update to send.
        if _read(await offers_for(ctx), str(params.uri)) is None:
            raise MCPError(
                INVALID_PARAMS, f"no resource {params.uri}; list them with resources/list"
            )
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        return EmptyResult()

    async def list_prompts(ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
        offered = await offers_for(ctx)
        return ListPromptsResult(prompts=[p for o in offered for p in o.listed_prompts()])

    async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        for offers in await offers_for(ctx):
            try:
                messages = offers.prompt_messages(params.name, dict(params.arguments or {}))
            except OfferError as exc:
                raise MCPError(INVALID_PARAMS, str(exc)) from exc
            if messages is not None:
                return GetPromptResult(messages=messages)
        raise MCPError(INVALID_PARAMS, f"no prompt {params.name!r}; list them with prompts/list")

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        values: list[str] = []
        ref = params.ref
        if getattr(ref, "type", None) == "ref/prompt":
            for offers in await offers_for(ctx):
                found = offers.completions(
                    str(getattr(ref, "name", "")), params.argument.name, params.argument.value
                )
                if found is not None:
                    values = found
                    break
        return CompleteResult(completion=Completion(values=values[:100], total=len(values)))

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        set_levels[session_of(ctx)] = params.level
        return EmptyResult()

    with warnings.catch_warnings():
        # The SDK marks logging deprecated from 2026-07-28; clients of earlier revisions use it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            "corral",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )
    # Seals the approval id an input-required answer hands the client (2026-07-28 flow).
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="corral")
    )
    return server


def _declared_offers(platform: Platform) -> dict[str, Offers]:
    """Each package's MCP declarations; a package whose file is broken offers none, and
    the log says what to fix."""
    found: dict[str, Offers] = {}
    for name, package in platform.registry.packages.items():
        try:
            found[name] = load_offers(name, package.path)
        except OfferError as exc:
            _log.warning("package %s offers nothing over MCP: %s", name, exc)
    return found


def _read(offered: list[Offers], uri: str) -> Contents | None:
    for offers in offered:
        contents = offers.read(uri)
        if contents is not None:
            return contents
    return None


async def _proposal(platform: Platform, kind: str, wait_id: str) -> dict[str, list[str]] | None:
    """For a parked command, the families and exact commands ``corral approvals decide
    --remember`` (or the HTTP decision's ``remember``) would keep; None for another call."""
    if kind != "approval":
        return None
    return await platform.rules.proposal(await platform.approvals.get(wait_id))


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
