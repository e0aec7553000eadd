"""The ``compact_history`` tool: a reversible trim of what the model reads of earlier rows.

The trim is a card the prompt overlay applies each step; the stored timeline never changes
(:mod:`corral.runtime.compaction`).
"""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["compact_history"]


async def compact_history(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.compactions
    if service is None:
        raise ToolError("compaction is not available on this platform", code="unavailable")
    return await service.compact(args, ctx)
