"""Stage ``context``: builds the :class:`~corral.tools.context.CallContext` the policy hook
and the handler receive; from here on a stage can read ``call.context``."""

from __future__ import annotations

import os

from corral.settings import Settings
from corral.tools.call import ToolCall
from corral.tools.context import CallContext
from corral.tools.results import ToolResult
from corral.tools.stages import Next

__all__ = ["BuildContext"]


class BuildContext:
    name = "context"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.enter(call)
        return await next(call)

    def enter(self, call: ToolCall) -> None:
        request = call.request
        ctx = CallContext(
            tool=call.tool.name,
            # 32 random hex digits, as uuid4().hex gave, without building a UUID per call.
            call_id=request.call_id or os.urandom(16).hex(),
            caller=request.caller,
            agent=request.agent,
            profile=request.profile,
            run_id=request.run_id,
            conversation_id=request.conversation_id,
            narrowing=request.narrowing,
            live=call.state.live,
            settings=self._settings,
            sources=call.state.sources,
            cancellation=call.cancellation,
            notes=call.notes,
            services=request.services,
            findings=call.findings,
        )
        if request.output is not None:
            ctx.output = request.output
        call.context = ctx
