"""A person's (or a workflow's) message meets the operator hooks before any row is stored.

Every entry point that opens a turn with a message runs them: a chat turn, a channel
message, a workflow run's opening instruction. SessionStart runs first on a new
conversation's first message (what it adds is context); UserPromptSubmit may block the
message (:class:`PromptBlocked`, whose text is the hook's reason) or add context the model
sees after the message (stored as the row's ``hook_context``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.errors import UsageError
from corral.runtime.hooks import added_context, permission_mode

if TYPE_CHECKING:
    from corral.runtime.conversations import ConversationInfo
    from corral.runtime.hooks import Hooks

__all__ = ["PromptBlocked", "prompt_hooks"]


class PromptBlocked(UsageError):
    """A UserPromptSubmit hook refused the message; ``reason`` names the hook and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the message was not sent: {reason}")
        self.reason = reason


async def prompt_hooks(
    hooks: Hooks | None, conversation: ConversationInfo, message: str
) -> list[str]:
    """Run the SessionStart and UserPromptSubmit hooks for ``message`` to ``conversation``;
    the context they add, in order. Raises :class:`PromptBlocked` on a block."""
    if hooks is None or not hooks.configured:
        return []
    common = {
        "session_id": conversation.id,
        "permission_mode": permission_mode(conversation.profile),
    }
    started: list[str] = []
    if conversation.last_seq == 0:
        started = await added_context(hooks, "SessionStart", {**common, "source": "startup"})
    outcome = await hooks.run("UserPromptSubmit", {**common, "prompt": message})
    if outcome.blocked:
        raise PromptBlocked(outcome.reason)
    return started + outcome.additional_context
