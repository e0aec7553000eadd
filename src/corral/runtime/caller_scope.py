"""Who acts in a turn, resolved once where the turn enters and passed down to its run.

An entry point (the HTTP request, the CLI command, the MCP session, the channel message,
the worker job) resolves the caller (user and roles), loads the agent and resolves the
model once, into a :class:`CallerScope`. The turn's run uses that scope when it starts in
the same process (:class:`ScopeHandoff`, keyed by conversation: the run's id is made while
the turn is stored), instead of resolving each again; a run that starts elsewhere (another
worker), resumes after a wait or is taken over is an entry point of its own and resolves
afresh, so rights are never older than the turn that started the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.runtime.agents import AgentConfig
from corral.runtime.models import ResolvedModel

if TYPE_CHECKING:
    from corral.runtime.runs import RunRecord

__all__ = ["HANDOFF_SECONDS", "CallerScope", "ScopeHandoff"]

HANDOFF_SECONDS = 10.0
"""How long an offered scope stays good: a run that starts later resolves afresh."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerScope:
    """The caller, the agent, the resolved model and the profile of one turn."""

    caller: Caller
    agent: AgentConfig
    model: ResolvedModel
    profile: Profile

    def fits(self, run: RunRecord) -> bool:
        """Whether ``run`` is the run this scope was resolved for."""
        return (
            run.user_id == self.caller.user_id
            and run.agent == self.agent.name
            and run.model == self.model.spec
            and run.profile == self.profile
        )


class ScopeHandoff:
    """Scopes resolved by an entry point, waiting for their run to start in this process."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[CallerScope, float]] = {}

    def offer(self, conversation_id: str, scope: CallerScope) -> None:
        self._waiting[conversation_id] = (scope, time.monotonic() + HANDOFF_SECONDS)

    def withdraw(self, conversation_id: str) -> None:
        """The turn did not start (busy, refused): nothing waits for its scope."""
        self._waiting.pop(conversation_id, None)

    def take(self, run: RunRecord) -> CallerScope | None:
        """The scope offered for ``run``'s conversation if it fits ``run`` and the run is
        starting (no step taken yet) within :data:`HANDOFF_SECONDS`; taken once."""
        offered = self._waiting.pop(run.conversation_id, None)
        if offered is None:
            return None
        scope, good_until = offered
        if run.steps or time.monotonic() > good_until or not scope.fits(run):
            return None
        return scope
