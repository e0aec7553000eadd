"""What one hook said, read as Claude Code reads it, and what all of them say together.

Exit 0 with empty stdout: no opinion. Exit 0 with a JSON object on stdout: its fields
(``continue``/``stopReason``, ``systemMessage``, ``decision``/``reason``,
``hookSpecificOutput.permissionDecision``/``permissionDecisionReason``/``updatedInput``/
``additionalContext``; for PermissionRequest ``hookSpecificOutput.decision.behavior``).
Plain text on stdout is added context for UserPromptSubmit and SessionStart, an error
elsewhere. Exit 2 blocks, with stderr as the reason. Any other exit is an error; an error
blocks or lets through as the hook's ``on_error`` says.

Combining is deterministic: hooks run in declared order, each ``updatedInput`` is the input
the next hook sees, deny beats ask beats allow, and the first deny ends the chain. What
"deny" means depends on the event: the tool call does not run (PreToolUse), the approval is
refused (PermissionRequest), the prompt is refused (UserPromptSubmit), the run goes on
instead of ending (Stop, SubagentStop), the reason is handed to the model with the result
(PostToolUse, PostToolUseFailure).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from corral.runtime.hooks.handlers import Reply

__all__ = ["Decision", "HookOutcome", "HookRecord", "Verdict", "read_reply", "stronger"]

Decision = Literal["allow", "deny", "ask"]
_RANK: dict[Decision | None, int] = {None: 0, "allow": 1, "ask": 2, "deny": 3}
_TEXT_IS_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})


class BadOutput(ValueError):
    """The hook's output is not what the protocol allows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """One hook's answer."""

    decision: Decision | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    system_message: str = ""
    stop: bool = False
    """``"continue": false``: the run is to end, with ``reason`` (``stopReason``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRecord:
    """One hook that ran, for the tool card and the run's rows."""

    hook: str
    """A short name: the script's file name or the URL's host and path."""
    target: str
    """The whole command line or URL."""
    event: str
    source: str
    outcome: Literal["no_opinion", "allow", "deny", "ask", "context", "error"]
    duration_ms: float
    reason: str = ""
    error: str = ""
    updated_input: bool = False


@dataclass(slots=True, kw_only=True)
class HookOutcome:
    """Every matching hook's answer, combined."""

    decision: Decision | None = None
    reason: str = ""
    """The deciding hook's reason, prefixed with its name ("blocked by hook check-rm.sh: ...")."""
    updated_input: dict[str, Any] | None = None
    additional_context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)
    stop: bool = False
    records: list[HookRecord] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        return self.decision == "deny"


def stronger(current: Decision | None, new: Decision | None) -> Decision | None:
    """Deny beats ask beats allow beats no opinion."""
    return new if _RANK[new] > _RANK[current] else current


def read_reply(event: str, reply: Reply) -> Verdict:
    """The verdict in ``reply``; :class:`BadOutput` when it breaks the protocol."""
    if reply.exit_code == 2:
        reason = reply.stderr.strip() or "the hook exited with status 2 and gave no reason"
        return Verdict(decision="deny", reason=reason)
    if reply.exit_code != 0:
        detail = reply.stderr.strip()[-500:]
        raise BadOutput(f"exited with status {reply.exit_code}" + (f": {detail}" if detail else ""))
    text = reply.stdout.strip()
    if not text:
        return Verdict()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        if event in _TEXT_IS_CONTEXT and parsed is None:
            return Verdict(additional_context=text)
        raise BadOutput(f"printed something that is not a JSON object: {text[:200]!r}")
    return _read_object(event, parsed)


def _read_object(event: str, output: Mapping[str, Any]) -> Verdict:
    stop = output.get("continue", True) is False
    stop_reason = _text(output, "stopReason")
    system_message = _text(output, "systemMessage")
    decision: Decision | None = None
    reason = _text(output, "reason")
    legacy = output.get("decision")
    if legacy == "block":
        decision = "deny"
    elif legacy == "approve" and event == "PreToolUse":
        decision = "allow"
    elif legacy is not None:
        raise BadOutput(f"'decision' must be 'block', not {legacy!r}")
    specific = output.get("hookSpecificOutput")
    updated: dict[str, Any] | None = None
    context = ""
    if specific is not None:
        if not isinstance(specific, dict):
            raise BadOutput("'hookSpecificOutput' must be an object")
        named = specific.get("hookEventName")
        if named is not None and named != event:
            raise BadOutput(f"'hookSpecificOutput.hookEventName' is {named!r}, not {event!r}")
        context = _text(specific, "additionalContext")
        updated = _object(specific, "updatedInput")
        permission = specific.get("permissionDecision")
        if permission is not None:
            if permission not in ("allow", "deny", "ask"):
                raise BadOutput(
                    f"'permissionDecision' must be 'allow', 'deny' or 'ask', not {permission!r}"
                )
            decision = permission
            reason = _text(specific, "permissionDecisionReason") or reason
        if event == "PermissionRequest" and specific.get("decision") is not None:
            decision, reason, updated = _permission_request(specific["decision"], updated)
    if stop:
        decision, reason = "deny", stop_reason or reason or "the hook asked to stop"
    return Verdict(
        decision=decision,
        reason=reason,
        updated_input=updated,
        additional_context=context,
        system_message=system_message,
        stop=stop,
    )


def _permission_request(
    value: Any, updated: dict[str, Any] | None
) -> tuple[Decision, str, dict[str, Any] | None]:
    if not isinstance(value, dict) or value.get("behavior") not in ("allow", "deny"):
        raise BadOutput("'hookSpecificOutput.decision.behavior' must be 'allow' or 'deny'")
    behaviour: Decision = "allow" if value["behavior"] == "allow" else "deny"
    return behaviour, _text(value, "message"), _object(value, "updatedInput") or updated


def _text(output: Mapping[str, Any], key: str) -> str:
    value = output.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadOutput(f"{key!r} must be a string, not {type(value).__name__}")
    return value


def _object(output: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = output.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadOutput(f"{key!r} must be a JSON object, not {type(value).__name__}")
    return value
