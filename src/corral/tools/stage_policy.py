"""Stage ``policy``: URI policies for the tool's declared path arguments, then the tool's
own policy hook (``execute``'s command guards live there). The hook may keep what it
checked on ``ctx.findings`` for the handler, which then need not check it again."""

from __future__ import annotations

import asyncio

from corral.tools.call import ToolCall
from corral.tools.json_pointers import get_pointer, pointer_parts
from corral.tools.results import ToolResult
from corral.tools.stages import Next

__all__ = ["PolicyCheck"]


class PolicyCheck:
    name = "policy"

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        tool, arguments, ctx = call.tool, call.arguments, call.context
        for declared in tool.spec.path_arguments:
            value = get_pointer(arguments, pointer_parts(declared.pointer))
            targets = value if isinstance(value, list) else [value]
            for target in targets:
                if isinstance(target, str):
                    ctx.sources.check(ctx.caller, target, declared.access)
        if tool.policy_hook is not None:
            outcome = tool.policy_hook(arguments, ctx)
            if asyncio.iscoroutine(outcome):
                await outcome
        return await next(call)
