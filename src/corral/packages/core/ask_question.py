"""The ``ask_question`` tool: put questions to the user and park the run until answered.

The tool never reaches a subagent: its file says ``"subagents": false`` and the pipeline's
context rules hide it from, and refuse it to, any run narrowed as a subagent.
"""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["ask_question"]


async def ask_question(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.questions
    if service is None:
        raise ToolError("questions are not available on this platform", code="unavailable")
    return await service.ask(args["questions"], ctx)
