"""Stage ``approval``: by permission profile and the tool's annotations. A call that needs
approval is parked as a durable record and answered with a typed wait; nothing is held open.
The decision runs the call again with ``approved`` set, and this stage lets it pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from corral.policy.profiles import Profile, needs_approval
from corral.tools.call import CallRequest, ToolCall
from corral.tools.registry import LoadedTool
from corral.tools.results import ToolResult
from corral.tools.secret_arguments import split_secrets
from corral.tools.stages import Next

__all__ = ["Approval", "ApprovalAdvice", "ApprovalSink"]


@dataclass(frozen=True, slots=True)
class ApprovalAdvice:
    """What an earlier stage (an operator's hook) says about asking a person: ``allow`` runs
    the call without asking, ``ask`` asks even where the profile would not. Put on
    ``call.findings``; the profile's own answer stands when there is none."""

    decision: Literal["allow", "ask"]
    reason: str


class ApprovalSink(Protocol):
    async def park(
        self,
        request: CallRequest,
        arguments: dict[str, Any],
        reason: str,
        *,
        secrets: dict[str, Any] | None = None,
    ) -> str:
        """Store a pending approval durably and return its id; ``secrets`` (taken out of
        ``arguments``) are kept sealed, never readable in the record."""
        ...


class Approval:
    name = "approval"

    def __init__(self, approvals: ApprovalSink) -> None:
        self._approvals = approvals

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        if call.approved:
            return await next(call)
        advice = call.findings.get(ApprovalAdvice)
        if advice is not None and advice.decision == "ask":
            return await self.park(call.request, call.tool, call.arguments, why=advice.reason)
        if advice is None and self.required(call.tool, call.request.profile):
            return await self.park(call.request, call.tool, call.arguments)
        return await next(call)

    def required(self, tool: LoadedTool, profile: Profile) -> bool:
        """Does this profile ask before this tool runs?"""
        return needs_approval(
            profile,
            tool.spec.approval,
            read_only=tool.spec.annotations.read_only,
            destructive=tool.spec.annotations.destructive,
        )

    async def park(
        self,
        request: CallRequest,
        tool: LoadedTool,
        arguments: dict[str, Any],
        *,
        why: str | None = None,
    ) -> ToolResult:
        reason = why or (
            f"{tool.name!r} needs approval under the {request.profile!r} profile "
            + ("(it always asks)" if tool.spec.approval == "always" else "(it can change things)")
        )
        redacted, secrets = split_secrets(arguments, tool.spec.secret_arguments)
        approval_id = await self._approvals.park(request, redacted, reason, secrets=secrets)
        return ToolResult.wait_for(
            "approval",
            approval_id,
            f"Waiting for approval {approval_id}: {reason}. The call runs once a person "
            "approves it and is refused if they deny it.",
            is_error=True,
            error_code="approval_pending",
            data={"approval_id": approval_id, "tool": tool.name, "reason": reason},
        )
