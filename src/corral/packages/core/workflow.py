"""The ``workflow`` tool: create, change, run and read the project's workflows.

The verbs apply in the order set → run → get → list after every one was checked
(:mod:`corral.runtime.workflows.tool`); the pipeline drops a verb the caller lacks the
feature for and its note names the refusal.
"""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["workflow"]


async def workflow(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.workflows
    if service is None:
        raise ToolError("workflows are not available on this platform", code="unavailable")
    return await service.call(args, ctx, ctx.notes)
