"""Approved calls made outside any run (a direct ``call_tool`` over HTTP, the CLI or MCP).

Such a call has no run and so no job, conversation or Stop of its own; it still never
runs inside the request that approved it. It runs as a task of this process, its result
stored on the approval record when it ends (``GET /approvals/{id}``); a CLI command, whose
process is the one running it, waits for it with :meth:`DirectCalls.wait`. The process
closing cancels what still runs, and the call's result records that it stopped.
"""

from __future__ import annotations

import asyncio
import logging

from corral.errors import ToolError
from corral.kernel import ApprovalRecord, Kernel
from corral.policy.profiles import parse_profile
from corral.tools.context import Cancellation, Narrowing
from corral.tools.dispatch import CallRequest
from corral.tools.results import ToolResult

__all__ = ["DirectCalls"]

log = logging.getLogger("corral.platform")


class DirectCalls:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._tasks: dict[str, asyncio.Task[ToolResult]] = {}
        self._cancellations: dict[str, Cancellation] = {}

    def start(self, record: ApprovalRecord) -> None:
        """Run the approved call ``record`` in the background; its result lands on it."""
        cancellation = Cancellation()
        self._cancellations[record.id] = cancellation
        task = asyncio.ensure_future(self._run(record, cancellation))
        self._tasks[record.id] = task
        task.add_done_callback(lambda _: self._forget(record.id))

    def _forget(self, approval_id: str) -> None:
        self._tasks.pop(approval_id, None)
        self._cancellations.pop(approval_id, None)

    async def _run(self, record: ApprovalRecord, cancellation: Cancellation) -> ToolResult:
        kernel = self._kernel
        try:
            # Rights are re-resolved now: a caller who lost a grant meanwhile is refused.
            request = CallRequest(
                tool=record.tool,
                arguments=kernel.approvals.arguments(record),
                caller=await kernel.caller(record.user_id),
                agent=record.agent,
                profile=parse_profile(record.profile),
                run_id=record.run_id,
                conversation_id=record.conversation_id,
                call_id=record.call_id,
                narrowing=Narrowing.from_json(record.narrowing),
                cancellation=cancellation,
                services=kernel.services,
            )
            result = await kernel.dispatcher.dispatch(request, approved=True)
        except ToolError as exc:
            result = ToolResult.from_error(exc)
        except Exception as exc:  # stored, not lost in a task nobody awaits
            log.exception("the approved call %s failed", record.id)
            result = ToolResult.from_error(
                ToolError(f"the approved call failed: {type(exc).__name__}: {exc}")
            )
        await kernel.approvals.store_result(record.id, result.to_json())
        return result

    async def wait(self, approval_id: str) -> ToolResult | None:
        """The result of an approved call this process runs (None: it runs nowhere here)."""
        task = self._tasks.get(approval_id)
        return None if task is None else await asyncio.shield(task)

    async def close(self) -> None:
        for cancellation in list(self._cancellations.values()):
            cancellation.cancel("shutdown")
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
