"""The pipeline's ``hooks`` stage: PreToolUse, PermissionRequest, PostToolUse and
PostToolUseFailure hooks around every tool call.

Placed right after ``visibility``, so what a hook rewrites (``updatedInput``) is validated
against the tool's schema, and checked by grants and the URI policy, like the model's own
arguments. ``deny`` refuses the call with the hook's reason; ``ask`` sends it to a person
even where the profile would not; ``allow`` runs it without asking (Claude Code's meaning).
Before a call parks for approval the PermissionRequest hooks may allow or deny it instead.
A call a person approved comes back through the pipeline with ``approved`` set: its
PreToolUse hooks already ran on the input the person saw, so only the Post hooks run then.
Notification hooks hear of a call that waits for a person. Every hook that ran is listed
in the result's ``data["hooks"]`` (the tool card, the run's rows); nothing is spent when no
hook is configured: the stage is then out of the composed chain (a switched stage,
:mod:`corral.tools.stages`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from corral.errors import ToolError
from corral.policy.profiles import Profile
from corral.runtime.hooks.engine import Hooks
from corral.runtime.hooks.outcome import HookOutcome, HookRecord
from corral.runtime.hooks.tool_input import tool_hook_input
from corral.tools.call import ToolCall
from corral.tools.registry import LoadedTool
from corral.tools.results import TextBlock, ToolResult
from corral.tools.stage_approval import ApprovalAdvice
from corral.tools.stages import Next, StageContribution

__all__ = ["HookStage", "hook_stage"]

ApprovalRequired = Callable[[LoadedTool, Profile], bool]


class HookStage:
    name = "hooks"

    def __init__(self, hooks: Hooks, approval_required: ApprovalRequired) -> None:
        self._hooks = hooks
        self._approval_required = approval_required

    def engaged(self) -> bool:
        """Out of the chain while no hook is configured (the dispatcher asks again when
        the configuration changes)."""
        return self._hooks.configured

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        if not self._hooks.configured or not isinstance(call.arguments, dict):
            return await next(call)  # not an object: validation refuses it next
        records: list[HookRecord] = []
        if not call.approved:
            refused = await self._before(call, records)
            if refused is not None:
                return _with_records(refused, records)
        result = await next(call)
        if result.waiting is not None and result.waiting.kind == "approval":
            await self._notify(call, records)
        elif result.status not in ("pending", "stopped"):
            await self._after(call, result, records)
        return _with_records(result, records)

    async def _notify(self, call: ToolCall, records: list[HookRecord]) -> None:
        """Notification hooks: the call waits for a person (Claude Code's permission
        prompt notification); what they answer changes nothing."""
        message = f"Corral needs your permission to use {call.tool.name}"
        payload = {
            "session_id": call.request.conversation_id or "",
            "message": message,
            "notification_type": "permission_prompt",
        }
        outcome = await self._hooks.run("Notification", payload)
        records.extend(outcome.records)

    async def _before(self, call: ToolCall, records: list[HookRecord]) -> ToolResult | None:
        pre = await self._run("PreToolUse", call, records)
        if pre.blocked:
            return _refused(pre)
        decision = pre.decision
        if decision != "allow" and (
            decision == "ask" or self._approval_required(call.tool, call.request.profile)
        ):
            asked = await self._run("PermissionRequest", call, records)
            if asked.blocked:
                return _refused(asked)
            if asked.decision == "allow":
                pre = asked
                decision = "allow"
        if decision in ("allow", "ask"):
            call.findings.put(ApprovalAdvice(decision, pre.reason))
        return None

    async def _after(self, call: ToolCall, result: ToolResult, records: list[HookRecord]) -> None:
        if result.is_error:
            post = await self._run("PostToolUseFailure", call, records, error=result.text)
        else:
            post = await self._run("PostToolUse", call, records, response=_response(result))
        if post.blocked:
            result.content.append(TextBlock(f"Hook feedback ({post.reason})"))
        for context in post.additional_context:
            result.content.append(TextBlock(context))

    async def _run(
        self, event: str, call: ToolCall, records: list[HookRecord], **extra: Any
    ) -> HookOutcome:
        request = call.request
        payload = tool_hook_input(
            arguments=call.arguments,
            call_id=request.call_id,
            conversation_id=request.conversation_id,
            profile=request.profile,
            **extra,
        )
        outcome = await self._hooks.run(event, payload, tool=call.tool.name)
        records.extend(outcome.records)
        if outcome.updated_input is not None and event in ("PreToolUse", "PermissionRequest"):
            call.arguments = outcome.updated_input
        return outcome


def hook_stage(hooks: Hooks, approval_required: ApprovalRequired) -> StageContribution:
    """The stage, placed right after ``visibility``."""
    return StageContribution(HookStage(hooks, approval_required), after="visibility")


def _refused(outcome: HookOutcome) -> ToolResult:
    return ToolResult.from_error(
        ToolError(
            f"{outcome.reason}. The call did not run; change it or do something else",
            code="hook_blocked",
        )
    )


def _response(result: ToolResult) -> dict[str, Any]:
    response: dict[str, Any] = {"content": result.text}
    if result.data:
        response["data"] = result.data
    return response


def _with_records(result: ToolResult, records: list[HookRecord]) -> ToolResult:
    if records:
        result.data = {**(result.data or {}), "hooks": [asdict(r) for r in records]}
    return result
