"""The ``tool_search`` tool: find and load deferred tools (:mod:`corral.runtime.tool_search`)."""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.runtime.tool_search import ToolSearch
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["tool_search"]


async def tool_search(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.get(ToolSearch)
    if service is None:
        raise ToolError("tool search is not available on this platform", code="unavailable")
    return await service.search(args, ctx)
