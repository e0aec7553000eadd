"""Stage ``shaping``: every refusal becomes an error result the model can read, and every
result is redacted and held to the tool result content cap (a marker names what was cut)."""

from __future__ import annotations

from corral.errors import ToolError
from corral.tools.call import StateProvider, ToolCall
from corral.tools.results import ToolResult, shape_result
from corral.tools.stages import Next

__all__ = ["ResultShaping"]


class ResultShaping:
    name = "shaping"

    def __init__(self, state: StateProvider) -> None:
        self._state = state

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        try:
            result = await next(call)
        except ToolError as error:
            result = ToolResult.from_error(error)
        return await self.shape(call, result)

    async def shape(self, call: ToolCall, result: ToolResult) -> ToolResult:
        # Read the redactor again: the handler may have read a stored credential this process
        # had not seen, and that value must not reach this very result.
        redactor = (await self._state.dispatch_state()).redactor
        cap = int(call.state.live["tool_result_content_cap"])
        return shape_result(result, cap=cap, redact=redactor)
