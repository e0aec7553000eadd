"""A call that needs approval, asked of the MCP client's user by elicitation.

When the client declared form elicitation (MCP 2025-11-25) and the request can carry a
server-to-client request, the bridge (:mod:`corral.server.mcp_bridge`) asks there: the tool,
a summary of its arguments and why it needs approval, with Approve / Deny and, for a command
the rules engine can remember, "remember the family / the exact command". Accept decides
the approval as the MCP session's caller; decline or cancel denies it. The call's result is
then read the way any surface reads it, from the approval's stored result once the call has
run (never from the decision's own return: the decision may only queue the call), so the
same ``tools/call`` answers with the call's real result.

On a 2026-07-28 connection (no server-to-client requests) the same question travels as the
revision's input-required flow: the call answers ``input_required`` with the elicitation and
the approval's id as its ``requestState`` (sealed by the SDK's request-state boundary, under
a key of this process), and the client's retry carries the answer; the retry never runs the
pipeline again, it decides the approval and answers with the call's result.

An approval decided on another surface (the web UI, the CLI) while the client's user is
being asked ends the question: the request is cancelled, so the client drops it, and the
call answers with the outcome decided there.

A client without elicitation, one whose request cannot carry it, or an answer that is not a
decision (an accept without one) leaves the approval pending as before: a person decides it
with ``corral approvals decide`` or the HTTP API.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Literal

from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

from corral.errors import ApprovalDenied, CorralError
from corral.kernel import ApprovalRecord
from corral.platform import Platform
from corral.policy.identity import Caller
from corral.tools.results import ToolResult

__all__ = [
    "APPROVAL_INPUT",
    "answer_from_retry",
    "approval_form",
    "approval_input_request",
    "ask_for_approval",
    "client_elicits",
    "wants_input_required",
]

APPROVAL_INPUT = "approval"
"""The key of the approval question among an input-required result's requests."""

_log = logging.getLogger(__name__)
_ARGUMENTS_SHOWN = 600
"""Characters of the arguments' JSON shown in the question."""
_FIRST_LOOK = 0.02
_LONGEST_LOOK = 1.0
"""Seconds between looks at the approval for the call's result: doubling up to this."""
_DECIDED_ELSEWHERE = ("denied", "expired", "cancelled", "closed")

Answer = tuple[Literal["approve", "deny"], Literal["exact", "family"] | None, str]
"""The decision, what to remember of it, and the note it is stored with."""


def _declares_form(session: Any) -> bool:
    capabilities = getattr(session, "client_capabilities", None)
    declared = getattr(capabilities, "elicitation", None)
    if declared is None:
        return False
    # An empty elicitation capability means form mode (2025-06-18 clients declare it so).
    return declared.form is not None or declared.url is None


def wants_input_required(session: Any) -> bool:
    """True on a 2026-07-28 connection whose client declared form elicitation."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    modern = getattr(session, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
    return modern and _declares_form(session)


def client_elicits(session: Any) -> bool:
    """True when the client declared form elicitation and this request can carry it."""
    return _declares_form(session) and bool(getattr(session, "can_send_request", True))


def approval_form(
    record: ApprovalRecord, proposal: dict[str, list[str]] | None
) -> tuple[str, dict[str, Any]]:
    """The elicitation's message and requested schema for ``record``."""
    shown = json.dumps(record.arguments, ensure_ascii=False, sort_keys=True)
    if len(shown) > _ARGUMENTS_SHOWN:
        shown = shown[:_ARGUMENTS_SHOWN] + "…"
    message = (
        f"Corral asks before running {record.tool!r}: {record.reason}\n"
        f"Arguments: {shown}\n"
        f"Approve to run it now and get its result here; deny (or decline) to refuse it."
    )
    properties: dict[str, Any] = {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "approve", "title": "Approve this call"},
                {"const": "deny", "title": "Deny this call"},
            ],
        }
    }
    remembered = [("once", "Only this call")]
    if proposal:
        if proposal.get("family"):
            family = ", ".join(proposal["family"])
            remembered.append(("family", f"Remember for the command family: {family}"))
        if proposal.get("exact"):
            exact = ", ".join(proposal["exact"])
            remembered.append(("exact", f"Remember for exactly: {exact}"))
    if len(remembered) > 1:
        properties["remember"] = {
            "type": "string",
            "title": "Remember the answer",
            "oneOf": [{"const": value, "title": title} for value, title in remembered],
            "default": "once",
        }
    schema = {"type": "object", "properties": properties, "required": ["decision"]}
    return message, schema


def read_answer(action: str, content: dict[str, Any] | None) -> Answer | None:
    """The decision an elicitation's answer makes; None when an accept carries none."""
    if action in ("decline", "cancel"):
        return "deny", None, f"{action}d in the MCP client"
    content = content or {}
    decision = content.get("decision")
    if decision not in ("approve", "deny"):
        return None
    remember = content.get("remember")
    kept: Literal["exact", "family"] | None = remember if remember in ("exact", "family") else None
    verb = "approved" if decision == "approve" else "denied"
    return decision, kept, f"{verb} in the MCP client"


async def ask_for_approval(
    platform: Platform, session: Any, request_id: Any, caller: Caller, approval_id: str
) -> ToolResult | None:
    """Ask the client's user to decide ``approval_id`` and return the call's result; None
    when it stays pending (no elicitation, no decision in the answer, or the client failed)."""
    if not client_elicits(session):
        return None
    record = await platform.approvals.get(approval_id)
    message, schema = approval_form(record, await platform.rules.proposal(record))
    asking = asyncio.ensure_future(
        session.elicit_form(message, schema, related_request_id=request_id)
    )
    elsewhere = asyncio.ensure_future(_no_longer_pending(platform, approval_id))
    try:
        await asyncio.wait({asking, elsewhere}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        elsewhere.cancel()
        if not asking.done():
            # Decided on another surface: cancelling the request tells the client to drop it.
            asking.cancel()
            await asyncio.gather(asking, return_exceptions=True)
    if asking.cancelled():
        return await call_result(platform, approval_id)
    try:
        answered = asking.result()
    except Exception as exc:  # the client's failure leaves the approval as it was: pending
        _log.warning("MCP client could not be asked to approve %s: %s", approval_id, exc)
        return None
    return await _decided(platform, caller, approval_id, answered.action, answered.content)


async def _no_longer_pending(platform: Platform, approval_id: str) -> None:
    pause = _FIRST_LOOK
    while (await platform.approvals.get(approval_id)).status == "pending":
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_LOOK)


async def approval_input_request(platform: Platform, approval_id: str) -> InputRequiredResult:
    """The input-required result asking the client's user to decide ``approval_id``."""
    record = await platform.approvals.get(approval_id)
    message, schema = approval_form(record, await platform.rules.proposal(record))
    question = ElicitRequest(
        params=ElicitRequestFormParams(message=message, requested_schema=schema)
    )
    return InputRequiredResult(input_requests={APPROVAL_INPUT: question}, request_state=approval_id)


async def answer_from_retry(
    platform: Platform, caller: Caller, approval_id: str, responses: Any
) -> ToolResult | None:
    """The call's result once the retry's answer decided ``approval_id``; None when the
    answer is missing or no decision (the approval stays pending)."""
    answered = (responses or {}).get(APPROVAL_INPUT)
    if isinstance(answered, dict):
        answered = ElicitResult.model_validate(answered)
    if not isinstance(answered, ElicitResult):
        return None
    return await _decided(platform, caller, approval_id, answered.action, answered.content)


async def _decided(
    platform: Platform,
    caller: Caller,
    approval_id: str,
    action: str,
    content: dict[str, Any] | None,
) -> ToolResult | None:
    answer = read_answer(action, content)
    if answer is None:
        return None
    decision, remember, note = answer
    try:
        # The decision may only queue the call: its result is read below, where it is stored.
        await platform.decide_approval(
            approval_id,
            decision,
            surface="mcp",
            note=note,
            user=caller.user_id,
            remember=remember,
        )
    except CorralError as exc:
        # Decided elsewhere first (or the rule could not be kept): the call's fate stands.
        _log.info("MCP decision on %s not taken: %s", approval_id, exc)
    return await call_result(platform, approval_id)


async def call_result(platform: Platform, approval_id: str) -> ToolResult:
    """The result of the decided approval's call, once the call has run."""
    pause = _FIRST_LOOK
    while True:
        record = await platform.approvals.get(approval_id)
        if record.result is not None:
            return ToolResult.from_json(record.result)
        if record.status in _DECIDED_ELSEWHERE:
            by = f" by {record.decided_by}" if record.decided_by else ""
            why = f": {record.note}" if record.note else ""
            return ToolResult.from_error(
                ApprovalDenied(
                    f"the call to {record.tool!r} was {record.status}{by}{why}; continue "
                    "without it or ask what to do instead"
                ),
                status="denied",
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_LOOK)
