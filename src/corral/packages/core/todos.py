"""The ``todos`` tool: the conversation's goal, acceptance conditions, loop bound and list.

The rules (verb order, locking, archiving to the session ledger) live in
:mod:`corral.runtime.goals.rules`; a call is applied whole, in one transaction, or refused.
"""

from __future__ import annotations

from typing import Any

from corral.errors import ToolError
from corral.tools.context import CallContext
from corral.tools.results import ToolResult

__all__ = ["todos"]


async def todos(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    service = ctx.services.goals
    if service is None:
        raise ToolError("goals are not available on this platform", code="unavailable")
    return await service.todos(args, ctx)
