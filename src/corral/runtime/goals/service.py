"""todos' service: the agent's calls, and the API for people and workflows to set goals.

A goal the agent plans is its own: it may clear or replace it. A goal a person or a
workflow sets is locked to the agent (``[set by … — locked]``) unless the workflow template
says ``evolve: "agent"``; only a person (or the workflow) clears or replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from corral.errors import ToolError, UsageError
from corral.runtime.goals.render import GOAL_CARD, GoalBlock, render_state
from corral.runtime.goals.rules import Change, apply_todos, clear_cycle, set_goal
from corral.runtime.goals.state import GoalState, SetBy
from corral.runtime.goals.store import GoalStore
from corral.runtime.timeline import NewRow
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import CallScope

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["Goals"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Goals:
    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime
        self.store = GoalStore(runtime.kernel.sessions, runtime.kernel.reader)
        self.block = GoalBlock(self.store)

    # -- the tool's side ------------------------------------------------------------------

    async def todos(self, args: Mapping[str, Any], ctx: CallScope) -> ToolResult:
        """One ``todos`` call by the agent, applied whole or not at all."""
        if ctx.conversation_id is None:
            raise ToolError(
                "todos keeps a conversation's goal and list, and this call has no "
                "conversation; plan in your reply instead",
                code="no_conversation",
            )
        now = _now()
        try:
            change = await self.store.change(
                ctx.conversation_id, lambda state: apply_todos(state, args, now=now)
            )
        finally:
            self.block.forget(ctx.conversation_id)
        return _result(change)

    # -- people and workflows -------------------------------------------------------------

    async def set_goal(
        self,
        conversation_id: str,
        goal: str,
        *,
        conditions: Sequence[str] = (),
        steps: Sequence[str] = (),
        loop: int | None = None,
        workflow: str | None = None,
        evolve: Literal["agent"] | None = None,
        replace: bool = False,
        user: str | None = None,
    ) -> GoalState:
        """Set the conversation's goal as ``user``, or as ``workflow`` (its template's name).

        The goal is locked to the agent unless a workflow sets it with ``evolve="agent"``.
        An open goal is replaced (archived as cleared) only with ``replace=True``.
        """
        caller = await self._rt.kernel.caller(user)
        (await self._rt.conversations.get(conversation_id)).check_access(caller)
        if evolve not in (None, "agent"):
            raise UsageError(f"evolve may only be 'agent', not {evolve!r}")
        if evolve is not None and workflow is None:
            raise UsageError("evolve is a workflow template's setting; name the workflow too")
        by = (
            SetBy(kind="workflow", name=workflow, evolve=evolve == "agent")
            if workflow is not None
            else SetBy(kind="user", name=caller.name)
        )
        now = _now()
        try:
            change = await self.store.change(
                conversation_id,
                lambda state: set_goal(
                    state,
                    goal,
                    conditions=conditions,
                    steps=steps,
                    loop=loop,
                    by=by,
                    replace=replace,
                    now=now,
                ),
            )
        except ToolError as error:
            raise UsageError(error.message) from None
        await self._recorded(conversation_id, change, "set", caller.user_id, by)
        return change.state

    async def clear_goal(self, conversation_id: str, *, user: str | None = None) -> GoalState:
        """Clear the open goal or list (archived as cleared) and the loop bound, as a person."""
        caller = await self._rt.kernel.caller(user)
        (await self._rt.conversations.get(conversation_id)).check_access(caller)
        now = _now()
        by = SetBy(kind="user", name=caller.name)
        try:
            change = await self.store.change(
                conversation_id, lambda state: clear_cycle(state, by=by, now=now)
            )
        except ToolError as error:
            raise UsageError(error.message) from None
        await self._recorded(conversation_id, change, "cleared", caller.user_id, by)
        return change.state

    async def _recorded(
        self, conversation_id: str, change: Change, action: str, user_id: str, by: SetBy
    ) -> None:
        """A person's change shows in the timeline as a ``goal`` card (which also tells
        other processes' prompt caches to read the state again)."""
        self.block.forget(conversation_id)
        goal = change.state.goal
        card = {
            "card": GOAL_CARD,
            "action": action,
            "goal": goal.to_json() if goal else None,
            "by": by.to_json(),
            "archived": [draft.entry for draft in change.archived],
        }
        await self._rt.append(conversation_id, [NewRow(kind="card", user_id=user_id, data=card)])

    async def state(self, conversation_id: str, *, user: str | None = None) -> GoalState:
        caller = await self._rt.kernel.caller(user)
        (await self._rt.conversations.get(conversation_id)).check_access(caller)
        return await self.store.load(conversation_id)

    async def ledger(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[dict[str, Any]]:
        """The session ledger: every closed cycle, a versioned entry each, oldest first."""
        caller = await self._rt.kernel.caller(user)
        (await self._rt.conversations.get(conversation_id)).check_access(caller)
        return await self.store.ledger(conversation_id)


def _result(change: Change) -> ToolResult:
    done = "; ".join(change.notes) if change.notes else "no change"
    text = f"{done}.\n\n{render_state(change.state)}"
    return ToolResult(
        content=[TextBlock(text)],
        data={
            "state": change.state.to_json(),
            "archived": [draft.entry for draft in change.archived],
        },
    )
