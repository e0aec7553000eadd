"""A server's resources, readable through one generated tool ``<server>_read_resource``.

Why a tool of the server's package rather than ``fs_read`` of an ``mcp://server/...`` URI:
the reader then comes and goes with the server, is switched off with its package, passes the
same visibility, narrowing and approval as the server's other tools, and its description can
list what the server offers (resources and URI templates) so the model knows what to ask
for. ``fs_read`` is about the URI policies of sources; a server's resources are not a source
an administrator granted, and mixing the two would let a server's answers pass for files.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

from corral.connect.mcp_client import McpConnection
from corral.connect.mcp_roots import roots_for
from corral.tools.context import CallContext
from corral.tools.contract import LoadError, parse_tool
from corral.tools.registry import LoadedTool
from corral.tools.results import AudioBlock, ContentBlock, ImageBlock, TextBlock, ToolResult

if TYPE_CHECKING:  # the SDK loads only once a server is in use (see connect.mcp_client)
    from mcp.types import ReadResourceResult

__all__ = ["LISTED_MAX", "resource_reader"]

LISTED_MAX = 30
"""Resources and templates named in the reader's description; the rest are counted."""
_NOT_NAME = re.compile(r"[^a-z0-9_]+")


def resource_reader(server: str, connection: McpConnection) -> LoadedTool | None:
    """The reader of ``server``'s resources, or None for a server that offers none."""
    resources, templates = connection.resources, connection.resource_templates
    if not resources and not templates:
        return None
    name = _NOT_NAME.sub("_", f"{server}_read_resource".lower()).strip("_")[:64]
    offered = [f"- {r.uri}: {r.description or r.title or r.name}" for r in resources]
    offered += [
        f"- {t.uri_template} (template): {t.description or t.title or t.name}" for t in templates
    ]
    more = len(offered) - LISTED_MAX
    listing = "\n".join(offered[:LISTED_MAX]) + (f"\n(and {more} more)" if more > 0 else "")
    raw: dict[str, Any] = {
        "name": name,
        "title": f"Read a resource of {server}",
        "description": f"Read one resource of the connected MCP server {server!r} by its URI "
        "(a listed one, or a template with its {placeholders} filled in). Its answers are the "
        f"server's, not verified by Corral. The server offers:\n{listing}",
        "input_schema": {
            "type": "object",
            "required": ["uri"],
            "additionalProperties": False,
            "properties": {
                "uri": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The resource's URI, exactly as listed or made from a template.",
                }
            },
        },
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": True,
        },
        "features": [],
        "approval": "annotations",
    }
    package = f"mcp:{server}"
    spec = parse_tool(raw, file=f"{package}/resources/read", package=package)
    if isinstance(spec, LoadError):  # only a server name past 64 characters could do this
        return None

    async def read(args: dict[str, Any], ctx: CallContext) -> ToolResult:
        uri = str(args["uri"])
        answer = await connection.read_resource(uri, roots=roots_for(ctx.caller, ctx.sources))
        return ToolResult(content=resource_blocks(answer), data={"server": server, "resource": uri})

    return LoadedTool(spec=spec, package=package, handler=read, is_async=True)


def resource_blocks(answer: ReadResourceResult) -> list[ContentBlock]:
    """Text contents as text, images and audio as such; other bytes are named, not shown."""
    blocks: list[ContentBlock] = []
    for item in answer.contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            blocks.append(TextBlock(text))
            continue
        media = item.mime_type or "application/octet-stream"
        kind = {"image": ImageBlock, "audio": AudioBlock}.get(media.split("/")[0])
        if kind is None:
            blocks.append(TextBlock(f"[{item.uri}: {media} content, not shown as text]"))
            continue
        try:
            data = base64.b64decode(getattr(item, "blob", ""), validate=True)
        except ValueError:
            blocks.append(TextBlock(f"[{item.uri}: {media} content that is not valid base64]"))
            continue
        blocks.append(kind(data=data, media_type=media))
    return blocks or [TextBlock("(the resource is empty)")]
