"""An MCP server's tool list as a Corral package ``mcp:<server>``.

Each server tool becomes a tool declaration validated by the same contract code as a tool
file, its input schema taken as the server gives it (only one that is not JSON Schema, or
cannot be validated against, leaves the tool out, with the reason), named ``<server>_<tool>`` so it
cannot pass for a native tool. The server's ``readOnlyHint`` / ``destructiveHint`` are
taken only from a server the operator trusts; an untrusted server's tools are declared
mutating and destructive, so the balanced profile asks before each call.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.connect.mcp_client import McpConnection
from corral.connect.mcp_roots import roots_for
from corral.errors import ToolError
from corral.packages.core.mcp_asker import RunAsker
from corral.packages.core.mcp_resources import resource_reader
from corral.tools.context import CallContext
from corral.tools.contract import LoadError, parse_tool, undescribed_properties
from corral.tools.registry import Handler, LoadedTool, Package
from corral.tools.results import AudioBlock, ContentBlock, ImageBlock, TextBlock, ToolResult

if TYPE_CHECKING:  # the SDK loads only once a server is in use (see connect.mcp_client)
    from mcp.types import CallToolResult, Tool

    from corral.shell.checkpoints.keeper import CheckpointKeeper

__all__ = ["build_package", "package_name", "tool_name", "warnings"]

_NOT_NAME = re.compile(r"[^a-z0-9_]+")
_QUESTION_SHARE = 0.9
"""The share of a call's time a person has to answer the server's question."""


def package_name(server: str) -> str:
    return f"mcp:{server}"


def tool_name(server: str, tool: str) -> str:
    """The Corral name of a server's tool: ``<server>_<tool>``, lowercase, ``_`` for the rest."""
    return _NOT_NAME.sub("_", f"{server}_{tool}".lower()).strip("_")[:64]


def declaration(server: str, tool: Tool, *, trusted: bool) -> dict[str, Any]:
    """The tool file an MCP tool would have been: its schema as the server gives it, and a
    description that says what is known (and what the server left undescribed)."""
    hints = tool.annotations
    read_only = bool(trusted and hints is not None and hints.read_only_hint)
    destructive = True
    if trusted and hints is not None and hints.destructive_hint is not None:
        destructive = hints.destructive_hint
    described = (tool.description or "").strip() or "The server gives no description of it."
    notes = [f"Tool {tool.name!r} of the connected MCP server {server!r}"]
    vague = [at.removeprefix("/properties/") for at in undescribed_properties(tool.input_schema)]
    if vague:
        notes.append(f"the server does not describe {', '.join(vague[:10])}")
    if tool.output_schema:
        notes.append("its answer also carries structured data checked against its schema")
    notes.append("its answers are the server's, not verified by Corral")
    return {
        "name": tool_name(server, tool.name),
        "title": (hints.title if hints and hints.title else None) or tool.title or tool.name,
        "description": f"{described}\n\n({'; '.join(notes)}.)",
        "input_schema": tool.input_schema,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": bool(trusted and hints and hints.idempotent_hint),
            "openWorldHint": True,
        },
        "features": [],
        "approval": "annotations",
    }


def warnings(tools: list[Tool]) -> list[str]:
    """What is usable but imperfect in a server's tools: properties without a description."""
    found = []
    for tool in tools:
        vague = undescribed_properties(tool.input_schema)
        if vague:
            found.append(
                f"{tool.name}: no description for {', '.join(vague[:10])} (the model sees "
                "the property names and types only)"
            )
    return found


def build_package(
    server: str,
    connection: McpConnection,
    tools: list[Tool],
    *,
    trusted: bool,
    folder: Path | None = None,
) -> Package:
    """The package of ``tools`` (and a resource reader for a server with resources); tools
    whose schema cannot be used are in its ``errors``. A stdio server working in ``folder``
    keeps a checkpoint around each call to a tool not declared read-only."""
    name = package_name(server)
    package = Package(
        name=name,
        path=Path(name),
        origin="mcp",
        description=f"Tools of the MCP server {server!r}",
    )
    for tool in tools:
        where = f"{name}/{tool.name}"
        spec = parse_tool(
            declaration(server, tool, trusted=trusted), file=where, package=name, external=True
        )
        if isinstance(spec, LoadError):
            package.errors.append(spec)
            continue
        if spec.name in package.tools:
            package.errors.append(
                LoadError(
                    file=where,
                    pointer="/name",
                    message=f"two tools of the server map to {spec.name!r}; this one is left out",
                    package=name,
                )
            )
            continue
        package.tools[spec.name] = LoadedTool(
            spec=spec,
            package=name,
            handler=_handler(connection, tool.name, None if spec.annotations.read_only else folder),
            is_async=True,
        )
    reader = resource_reader(server, connection)
    if reader is not None and reader.name not in package.tools:
        package.tools[reader.name] = reader
    return package


def _handler(connection: McpConnection, remote: str, folder: Path | None) -> Handler:
    async def call(args: dict[str, Any], ctx: CallContext) -> ToolResult:
        # Checkpoints load with the first call, as the shell service is built on first need.
        from corral.shell.checkpoints.around import around
        from corral.shell.checkpoints.rows import CallScope

        async def heard(progress: float, total: float | None, message: str | None) -> None:
            ctx.output("progress", progress_line(progress, total, message))

        roots = roots_for(ctx.caller, ctx.sources)
        # A question unanswered by then is declined while the server still has time to finish.
        asker = RunAsker(ctx, wait_seconds=connection.call_timeout * _QUESTION_SHARE)
        keeper, written = _checkpointed(ctx, folder)
        async with around(
            keeper, written, ctx.live, call_id=ctx.call_id, conversation_id=ctx.conversation_id
        ) as checkpointing:
            running = asyncio.ensure_future(
                connection.call(remote, args, roots=roots, progress=heard, asker=asker)
            )
            # Stop cancels the request at once (the SDK tells the server), not after the grace
            # the pipeline gives handlers that wind down by themselves.
            unregister = ctx.cancellation.on_cancel(running.cancel)
            try:
                answer = await running
            except asyncio.CancelledError:
                if not ctx.cancellation.cancelled or _cancelled_from_outside():
                    raise
                answer = None
            finally:
                unregister()
            scope = CallScope(
                conversation_id=ctx.conversation_id,
                run_id=ctx.run_id,
                user_id=ctx.caller.user_id,
                tool=ctx.tool,
            )
            checkpoint = await checkpointing.keep(ctx.call_id, scope, ctx.live)
        if checkpointing.unkept:
            ctx.notes.append(checkpointing.unkept)
        if answer is None:
            return ToolResult.text_result(
                f"Stopped: {remote!r} of the MCP server {connection.name!r} was cancelled "
                "before it finished; the server was told to stop it.",
                is_error=True,
                error_code="stopped",
                status="stopped",
            )
        result = to_result(answer, connection.name, remote)
        if checkpoint is not None and result.data is not None:
            result.data["checkpoint"] = checkpoint
        return result

    return call


def _checkpointed(
    ctx: CallContext, folder: Path | None
) -> tuple[CheckpointKeeper | None, list[Path]]:
    """The keeper and the sources to snapshot around a call of a server working in
    ``folder`` (none: the tool is read-only, or the server does not run on a source the
    caller may write)."""
    from corral.shell.checkpoints.around import writable_roots
    from corral.shell.service import ShellService  # built on first need

    shells = ctx.services.get(ShellService)
    if folder is None or shells is None:
        return None, []
    writable = writable_roots(ctx.sources, ctx.caller)
    if not any(folder.is_relative_to(root) for root in writable):
        return None, []
    return shells.checkpoints, writable


def _cancelled_from_outside() -> bool:
    """Whether this task itself is being cancelled (not only the call it waited for)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def progress_line(done: float, total: float | None, message: str | None) -> str:
    """One line of live output for a progress notification: ``3/10 copying…``."""
    amount = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"{amount} {message}\n" if message else f"{amount}\n"


def to_result(answer: CallToolResult, server: str, remote: str) -> ToolResult:
    """The server's content blocks as the result, its structured content as the card's data."""
    blocks, text = content_blocks(answer.content)
    if answer.is_error:
        raise ToolError(
            f"MCP server {server!r} reported an error from {remote!r}: {text}",
            code="mcp_tool_error",
        )
    data: dict[str, Any] = {"server": server, "tool": remote}
    if answer.structured_content is not None:
        data["structured"] = answer.structured_content
        if not blocks:  # the specification asks for a text copy; a server that skips it
            blocks = [TextBlock(json.dumps(answer.structured_content, ensure_ascii=False))]
    return ToolResult(content=blocks or [TextBlock("(the server returned no content)")], data=data)


def content_blocks(content: list[Any]) -> tuple[list[ContentBlock], str]:
    """Corral's blocks for the SDK's content, and their text (what an error message shows)."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, TextContent

    blocks: list[ContentBlock] = []
    others: set[str] = set()
    for block in content:
        if isinstance(block, TextContent):
            blocks.append(TextBlock(block.text))
        elif isinstance(block, ImageContent | AudioContent):
            kind = ImageBlock if isinstance(block, ImageContent) else AudioBlock
            try:
                raw = base64.b64decode(block.data, validate=True)
            except ValueError:
                others.add(f"{block.type} (not valid base64)")
                continue
            blocks.append(kind(data=raw, media_type=block.mime_type))
        elif isinstance(block, EmbeddedResource) and hasattr(block.resource, "text"):
            blocks.append(TextBlock(f"[{block.resource.uri}]\n{block.resource.text}"))
        else:
            others.add(str(getattr(block, "type", type(block).__name__)))
    if others:
        blocks.append(
            TextBlock(f"[the server also sent {', '.join(sorted(others))} content, not shown]")
        )
    text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    return blocks, text or "(the server returned no text)"
