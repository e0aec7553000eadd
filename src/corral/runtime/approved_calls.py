"""Approved calls run in their run's own job, never in the request that approved them.

Deciding an approval only records the answer and queues the run. When the run's job
continues it, :func:`run_approved_calls` runs each approved call that has no result yet
through the pipeline with ``approved=True``: the caller's rights as the run re-resolved
them, the run's cancellation (Stop ends the call) and live output. Its result is stored as
the ``tool_result`` row the turn was missing, then the turn goes on.

A call is started once (:meth:`~corral.kernel.approvals.ApprovalStore.start`): a job that
takes the run over after a worker died mid-call runs it again only when the tool is
idempotent, and otherwise answers it ``interrupted``, as a takeover does for any call.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from corral.errors import ToolError
from corral.kernel.approvals import ApprovalRecord
from corral.policy.profiles import parse_profile
from corral.runtime.calls import StepScope, result_row, wait_of
from corral.runtime.parking import answered_calls
from corral.runtime.run_spans import resumed
from corral.runtime.runs import Wait
from corral.runtime.takeover import interrupted_result
from corral.runtime.timeline import NewRow
from corral.tools.context import Narrowing
from corral.tools.dispatch import CallRequest
from corral.tools.results import ToolResult

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["run_approved_calls"]

_APPROVED_UNRUN = (
    "SELECT 1 FROM approvals WHERE run_id = ? AND status = 'approved' AND result IS NULL"
)


async def run_approved_calls(rt: RunHost, scope: StepScope) -> tuple[Wait, ...]:
    """Run the run's approved calls that have no result yet; the waits they park on in
    turn (a delegate whose child parked)."""
    run = scope.run
    reader = rt.kernel.reader
    if reader is not None and reader.exists(_APPROVED_UNRUN, (run.id,)) is False:
        return ()  # most runs have none: answered without a session
    records = [r for r in await rt.kernel.approvals.approved_unrun(run.id) if r.call_id]
    if not records:
        return ()
    done = await answered_calls(rt, run.id, [r.call_id or "" for r in records])
    todo = [r for r in records if r.call_id not in done]
    # At once, as the turn's calls ran: two approved 15 s commands take 15 s, not 30.
    found = await asyncio.gather(*(_run_one(rt, scope, r) for r in todo))
    rt.prompt.invalidate(run.conversation_id)
    return tuple(w for w in found if w is not None)


async def _run_one(rt: RunHost, scope: StepScope, record: ApprovalRecord) -> Wait | None:
    run, call_id = scope.run, record.call_id or ""
    await resumed(
        rt.kernel.approvals.decisions, record.id, call_id, record.status, record.decided_by
    )
    if await rt.kernel.approvals.start(record.id) or _idempotent(rt, record.tool):
        result = await _dispatch(rt, scope, record)
    else:
        result = interrupted_result(record.tool)  # a job that died had started it
    await rt.kernel.approvals.store_result(record.id, result.to_json())
    wait = wait_of(result, call_id, record.tool)
    if wait is None:
        row = result_row(run, call_id, record.tool, result)
    else:
        row = NewRow(
            kind="card",
            run_id=run.id,
            user_id=run.user_id,
            call_id=call_id,
            data={"card": "waiting", "wait": wait.to_json(), "text": result.text},
        )
    await rt.append(run.conversation_id, [row])
    return wait


async def _dispatch(rt: RunHost, scope: StepScope, record: ApprovalRecord) -> ToolResult:
    run, call_id = scope.run, record.call_id or ""
    try:
        arguments = rt.kernel.approvals.arguments(record)
    except ToolError as exc:  # its sealed secrets cannot be read any more
        return ToolResult.from_error(exc)
    return await rt.kernel.dispatcher.dispatch(
        CallRequest(
            tool=record.tool,
            arguments=arguments,
            caller=scope.caller,
            agent=record.agent,
            profile=parse_profile(record.profile),
            run_id=run.id,
            conversation_id=run.conversation_id,
            call_id=call_id,
            narrowing=Narrowing.from_json(record.narrowing),
            cancellation=scope.cancellation,
            output=rt.output_sink(run, call_id),
            services=scope.services,
        ),
        approved=True,
    )


def _idempotent(rt: RunHost, tool: str) -> bool:
    loaded = rt.kernel.registry.tools.get(tool)
    return loaded is not None and loaded.spec.annotations.idempotent
