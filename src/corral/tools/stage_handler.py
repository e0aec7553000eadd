"""Stage ``handler``: the tool's handler runs, cancellable by Stop; the innermost stage.

Stop gives the handler a grace period to wind down on its own, then cancels it. A handler's
:class:`~corral.errors.ToolError` and any unexpected exception become error results; the
notes earlier stages left (dropped arguments) are appended to what it returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from corral.errors import ToolError
from corral.tools.call import ToolCall
from corral.tools.handler_threads import run_in_thread
from corral.tools.results import TextBlock, ToolResult, coerce_result
from corral.tools.stages import Next

__all__ = ["RunHandler"]

log = logging.getLogger("corral.tools")


class RunHandler:
    name = "handler"

    def __init__(self, *, stop_grace: Callable[[], float]) -> None:
        self._stop_grace = stop_grace
        """Seconds a handler may wind down after Stop, read at each Stop."""

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        # One coroutine for the whole step: this runs on every call.
        tool, arguments, ctx = call.tool, call.arguments, call.context
        cancellation = ctx.cancellation
        if cancellation.cancelled:
            return _with_notes(_stopped_result(tool.name), call.notes)
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        timer: list[asyncio.TimerHandle] = []
        fired: list[bool] = []

        def cancel_now() -> None:
            fired.append(True)
            if current is not None:
                current.cancel()

        # The handler is awaited directly, not in a task of its own (a task costs a loop
        # turn), so after the grace this very task is cancelled.
        unregister = cancellation.on_cancel(
            lambda: timer.append(loop.call_later(self._stop_grace(), cancel_now))
        )
        try:
            if tool.is_async:
                value = await tool.handler(arguments, ctx)
            elif tool.spec.blocking:
                value = await run_in_thread(tool.handler, arguments, ctx)
            else:
                value = tool.handler(arguments, ctx)
        except asyncio.CancelledError:
            if current is None or not fired:
                raise
            fired.clear()
            if current.uncancel() > 0:
                raise  # the caller is being cancelled too
            return _with_notes(_stopped_result(tool.name), call.notes)
        except ToolError as error:
            return _with_notes(ToolResult.from_error(error), call.notes)
        except Exception as exc:
            log.exception("tool %r failed", tool.name)
            failed = ToolError(
                f"the tool {tool.name!r} failed unexpectedly: {type(exc).__name__}: {exc}",
                code="tool_failed",
            )
            return _with_notes(ToolResult.from_error(failed), call.notes)
        finally:
            unregister()
            for handle in timer:
                handle.cancel()
            if fired and current is not None:
                current.uncancel()  # the handler swallowed our cancel and returned anyway
        result = coerce_result(value)
        if cancellation.cancelled and result.status == "ok":
            result.status = "stopped"
        return _with_notes(result, call.notes)


def _with_notes(result: ToolResult, notes: list[str]) -> ToolResult:
    if notes:
        result.content.append(TextBlock("Note: " + " ".join(notes)))
    return result


def _stopped_result(tool: str) -> ToolResult:
    return ToolResult.text_result(
        f"Stopped: the run was stopped before {tool!r} finished; nothing more was captured.",
        is_error=True,
        error_code="stopped",
        status="stopped",
    )
