"""Running the tool calls of one model turn, concurrently, through the dispatch pipeline.

Each result is stored as its ``tool_result`` row the moment it arrives. A call that comes
back ``pending`` (an approval now; a question in issue 7) stores a ``waiting`` card instead
and becomes a :class:`~corral.runtime.runs.Wait` the run parks on.

A pending result names what it waits for in its typed ``waiting`` field
(:meth:`~corral.tools.results.ToolResult.wait_for`): an approval from the pipeline, a
question from ask_question, or any kind a handler defines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.errors import InvalidArguments
from corral.kernel.rule_proposals import propose
from corral.policy.identity import Caller
from corral.runtime.runs import RunRecord, Wait
from corral.runtime.skills.allowed_tools import run_narrowing
from corral.runtime.timeline import NewRow
from corral.tools.context import Cancellation
from corral.tools.dispatch import CallRequest
from corral.tools.results import ToolResult
from corral.tools.secret_arguments import storable
from corral.tools.services import Services

if TYPE_CHECKING:
    from pydantic_ai.messages import ToolCallPart

    from corral.runtime.host import RunHost

__all__ = ["CallOutcome", "StepScope", "result_row", "run_calls", "wait_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepScope:
    """What every call of one step shares."""

    run: RunRecord
    caller: Caller
    cancellation: Cancellation
    services: Services


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    call_id: str
    tool: str
    result: ToolResult
    wait: Wait | None


def _secret_pointers(rt: RunHost, tool: str) -> tuple[str, ...]:
    loaded = rt.kernel.registry.tools.get(tool)
    return loaded.spec.secret_arguments if loaded is not None else ()


def wait_of(result: ToolResult, call_id: str, tool: str) -> Wait | None:
    """The wait a pending result parks on, or None for any other result."""
    if result.status != "pending" or result.waiting is None:
        return None
    return Wait(kind=result.waiting.kind, id=result.waiting.id, call_id=call_id, tool=tool)


def result_row(run: RunRecord, call_id: str, tool: str, result: ToolResult) -> NewRow:
    return NewRow(
        kind="tool_result",
        run_id=run.id,
        user_id=run.user_id,
        call_id=call_id,
        data={"tool": tool, "result": result.to_json()},
    )


def _arguments(call: ToolCallPart) -> dict[str, Any] | ToolResult:
    args = call.args_as_dict()
    if set(args) == {"INVALID_JSON"}:
        return ToolResult.from_error(
            InvalidArguments(
                f"the arguments for {call.tool_name!r} were not valid JSON; send one JSON "
                "object that matches the tool's input schema"
            )
        )
    return args


async def _one(rt: RunHost, scope: StepScope, call: ToolCallPart) -> CallOutcome:
    run = scope.run
    call_id = call.tool_call_id
    args = _arguments(call)
    if isinstance(args, ToolResult):
        result = args
    else:
        result = await rt.kernel.dispatcher.dispatch(
            CallRequest(
                tool=call.tool_name,
                arguments=args,
                caller=scope.caller,
                agent=run.agent,
                profile=run.profile,
                run_id=run.id,
                conversation_id=run.conversation_id,
                call_id=call_id,
                narrowing=run_narrowing(scope.services, run),
                cancellation=scope.cancellation,
                output=rt.output_sink(run, call_id),
                services=scope.services,
            )
        )
    wait = wait_of(result, call_id, call.tool_name)
    if wait is None:
        row = result_row(run, call_id, call.tool_name, result)
    else:
        stored = (
            storable(_secret_pointers(rt, call.tool_name), args) if isinstance(args, dict) else {}
        )
        # Proposed from the stored arguments: a secret argument never reaches the card.
        proposal = (
            await propose(
                rt.kernel.command_rules,
                tool=call.tool_name,
                arguments=stored,
                user_id=run.user_id,
                agent=run.agent,
            )
            if wait.kind == "approval"
            else None
        )
        row = NewRow(
            kind="card",
            run_id=run.id,
            user_id=run.user_id,
            call_id=call_id,
            data={
                "card": "waiting",
                "wait": wait.to_json(),
                "args": stored,
                "text": result.text,
                "reason": (result.data or {}).get("reason"),
                "remember": proposal,
            },
        )
    await rt.append(run.conversation_id, [row])
    return CallOutcome(call_id=call_id, tool=call.tool_name, result=result, wait=wait)


async def run_calls(
    rt: RunHost, scope: StepScope, calls: Sequence[ToolCallPart]
) -> list[CallOutcome]:
    """Run every call of a turn at once; each result is stored as it arrives."""
    if len(calls) == 1:
        return [await _one(rt, scope, calls[0])]
    return list(await asyncio.gather(*(_one(rt, scope, call) for call in calls)))
