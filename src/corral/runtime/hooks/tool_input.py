"""The hook input of a tool event, built the same way by every caller (the pipeline's stage,
``corral hooks test``): Claude Code's field names, Corral's values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corral.runtime.hooks.engine import permission_mode

__all__ = ["tool_hook_input"]


def tool_hook_input(
    *,
    arguments: Mapping[str, Any],
    call_id: str | None,
    conversation_id: str | None,
    profile: str,
    response: Any = None,
    error: str | None = None,
) -> dict[str, Any]:
    """PreToolUse / PermissionRequest input; with ``response`` PostToolUse's, with ``error``
    PostToolUseFailure's. ``tool_name`` is filled by :meth:`Hooks.run` from its ``tool``."""
    data: dict[str, Any] = {
        "session_id": conversation_id or "",
        "permission_mode": permission_mode(profile),
        "tool_input": dict(arguments),
        "tool_use_id": call_id or "",
    }
    if response is not None:
        data["tool_response"] = response
    if error is not None:
        data["error"] = error
    return data
