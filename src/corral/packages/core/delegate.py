"""The ``delegate`` tool: a subagent with its own loop whose answer is the result.

Reach only narrows (:mod:`corral.runtime.delegation.reach`); the child's run stores its
narrowing and the pipeline applies it on every call the child makes.
"""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["delegate"]


async def delegate(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.runs
    if service is None:
        raise ToolError("delegate runs are not available on this platform", code="unavailable")
    return await service.delegate(args, ctx)
