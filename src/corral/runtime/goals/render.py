"""The goal state as the model reads it, in the system prompt and in todos results."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.runtime.goals.state import ClosedCycle, GoalState
from corral.runtime.timeline import TimelineRow

if TYPE_CHECKING:
    from corral.runtime.goals.store import GoalStore
    from corral.runtime.prompt import PromptView

__all__ = ["GOAL_CARD", "GoalBlock", "closed_cycles_line", "render_state"]

GOAL_CARD = "goal"
"""The card a person's or a workflow's change to the goal leaves in the timeline."""

TAG = "goal_state"
CLOSED_SHOWN = 8
"""Closed cycles named on the one line; older ones are counted."""

_STATUS = {"pending": "pending", "in_progress": "in progress", "done": "done", "skipped": "skipped"}


def closed_cycles_line(closed: list[ClosedCycle]) -> str | None:
    """One line naming the closed cycles, newest last; None when none closed yet."""
    if not closed:
        return None
    shown = closed[-CLOSED_SHOWN:]
    earlier = len(closed) - len(shown)
    names = "; ".join(f'v{c.version} {c.outcome} "{c.title}"' for c in shown)
    prefix = f"(+{earlier} earlier) " if earlier else ""
    return f"Closed cycles: {prefix}{names}"


def render_state(state: GoalState) -> str:
    lines: list[str] = []
    goal = state.goal
    if goal is not None:
        lines.append(f"Goal (cycle {state.cycle}): {goal.text} {goal.set_by.marker()}")
        if goal.conditions:
            lines.append(
                "Acceptance conditions (fixed; mark each met with todos mark.conditions, by "
                "number or exact text):"
            )
            for number, condition in enumerate(goal.conditions, start=1):
                mark = "met" if condition.met else "open"
                lines.append(f"  {number}. [{mark}] {condition.text}")
        else:
            lines.append(
                'No acceptance conditions: close it with todos close: "achieved" once it is.'
            )
    loop = state.loop
    if loop is not None:
        closed = state.loop_closed()
        if not state.empty:
            past = " (past the bound: finish it, then report)" if closed >= loop.bound else ""
            lines.append(f"Loop bound: cycle {closed + 1} of {loop.bound}{past}.")
        elif state.loop_exhausted():
            lines.append(
                f"Loop bound reached: {closed} of {loop.bound} cycles closed. Do not open "
                "another cycle; report to the user what was done and what is left."
            )
        else:
            lines.append(f"Loop bound: {closed} of {loop.bound} cycles closed.")
    if state.steps:
        lines.append("Todo list:" if goal is not None else "Todo list (no goal):")
        for step in state.steps:
            lines.append(f"  {step.id}. [{_STATUS.get(step.status, step.status)}] {step.text}")
    if state.empty:
        lines.append("No goal or todo list is open.")
    line = closed_cycles_line(state.closed)
    if line is not None:
        lines.append(line)
    return "\n".join(lines)


@dataclass(slots=True)
class _Rendered:
    rows: Sequence[TimelineRow]
    seen: int
    text: str


def _touches_goal(rows: Sequence[TimelineRow], start: int) -> bool:
    """Whether rows from ``start`` on record a change of the goal state."""
    for index in range(start, len(rows)):
        row = rows[index]
        if row.kind == "tool_result" and row.data.get("tool") == "todos":
            return True
        if row.kind == "card" and row.data.get("card") == GOAL_CARD:
            return True
    return False


class GoalBlock:
    """The state block: goal, conditions, loop bound, todo list and the closed-cycles line,
    in every system prompt.

    The text is kept per conversation and read again from the store only when the state
    may have changed: a change made in this process (:meth:`forget`), or a row that records
    one (a ``todos`` result, a ``goal`` card), so a step without one costs no query.
    """

    name = "goal_state"

    def __init__(self, store: GoalStore, *, capacity: int = 64) -> None:
        self._store = store
        self._rendered: OrderedDict[str, _Rendered] = OrderedDict()
        self._capacity = capacity

    def forget(self, conversation_id: str) -> None:
        self._rendered.pop(conversation_id, None)

    async def render(self, view: PromptView) -> str | None:
        rows = view.rows
        kept = self._rendered.get(view.conversation_id)
        if kept is not None and kept.rows is rows and not _touches_goal(rows, kept.seen):
            kept.seen = len(rows)
            self._rendered.move_to_end(view.conversation_id)
            return kept.text
        seen = len(rows)
        state = await self._store.load(view.conversation_id)
        text = f"<{TAG}>\n{render_state(state)}\n</{TAG}>"
        self._rendered[view.conversation_id] = _Rendered(rows=rows, seen=seen, text=text)
        self._rendered.move_to_end(view.conversation_id)
        while len(self._rendered) > self._capacity:
            self._rendered.popitem(last=False)
        return text
