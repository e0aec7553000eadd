"""An MCP server's tool list as a Corral package ``mcp:<server>``.

Each server tool becomes a tool declaration validated by the same contract code as a tool
file (a tool that breaks it is left out with its error), named ``<server>_<tool>`` so it
cannot pass for a native tool. The server's ``readOnlyHint`` / ``destructiveHint`` are
taken only from a server the operator trusts; an untrusted server's tools are declared
mutating and destructive, so the balanced profile asks before each call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.connect.mcp_client import McpConnection
from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.contract import LoadError, parse_tool
from corral.tools.registry import Handler, LoadedTool, Package
from corral.tools.results import ToolResult

if TYPE_CHECKING:  # the SDK loads only once a server is in use (see connect.mcp_client)
    from mcp.types import CallToolResult, Tool

__all__ = ["build_package", "package_name", "tool_name"]

_NOT_NAME = re.compile(r"[^a-z0-9_]+")


def package_name(server: str) -> str:
    return f"mcp:{server}"


def tool_name(server: str, tool: str) -> str:
    """The Corral name of a server's tool: ``<server>_<tool>``, lowercase, ``_`` for the rest."""
    return _NOT_NAME.sub("_", f"{server}_{tool}".lower()).strip("_")[:64]


def declaration(server: str, tool: Tool, *, trusted: bool) -> dict[str, Any]:
    """The tool file an MCP tool would have been."""
    hints = tool.annotations
    read_only = bool(trusted and hints is not None and hints.read_only_hint)
    destructive = True
    if trusted and hints is not None and hints.destructive_hint is not None:
        destructive = hints.destructive_hint
    described = (tool.description or "").strip()
    return {
        "name": tool_name(server, tool.name),
        "title": (hints.title if hints and hints.title else None) or tool.title or tool.name,
        "description": f"{described}\n\n(Tool {tool.name!r} of the connected MCP server "
        f"{server!r}; its answers are the server's, not verified by Corral.)".lstrip(),
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


def build_package(
    server: str, connection: McpConnection, tools: list[Tool], *, trusted: bool
) -> Package:
    """The package of ``tools``; tools the contract refuses are in its ``errors``."""
    name = package_name(server)
    package = Package(
        name=name,
        path=Path(name),
        origin="mcp",
        description=f"Tools of the MCP server {server!r}",
    )
    for tool in tools:
        where = f"{name}/{tool.name}"
        spec = parse_tool(declaration(server, tool, trusted=trusted), file=where, package=name)
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
            spec=spec, package=name, handler=_handler(connection, tool.name), is_async=True
        )
    return package


def _handler(connection: McpConnection, remote: str) -> Handler:
    async def call(args: dict[str, Any], ctx: CallContext) -> ToolResult:
        return to_result(await connection.call(remote, args), connection.name, remote)

    return call


def to_result(answer: CallToolResult, server: str, remote: str) -> ToolResult:
    """Text blocks as the result; other block kinds are named, not passed through."""
    from mcp.types import TextContent

    texts = [block.text for block in answer.content if isinstance(block, TextContent)]
    others = sorted({block.type for block in answer.content if not isinstance(block, TextContent)})
    if others:
        texts.append(f"[the server also sent {', '.join(others)} content, not shown]")
    text = "\n".join(texts) or "(the server returned no text)"
    if answer.is_error:
        raise ToolError(
            f"MCP server {server!r} reported an error from {remote!r}: {text}",
            code="mcp_tool_error",
        )
    return ToolResult.text_result(text, data={"server": server, "tool": remote})
