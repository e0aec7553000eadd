"""The rules of ``todos``, as pure functions on a working copy of the goal state.

One call applies its verbs in a fixed order:

- without ``close``: ``plan``, then ``mark``;
- with ``close``: ``mark`` and ``close`` end the current cycle first, then ``plan`` opens the
  next (so one call replaces the agent's own goal).

After ``mark``, a goal whose last condition is now met is *achieved*, and a list without a
goal whose every step is finished is *completed*: either way goal and list are archived as
the next versioned ledger entry and both start empty. Any refusal raises a
:class:`~corral.errors.ToolError` with a stable code before anything is stored, so a call is
applied whole or not at all.

Error codes: ``goal_locked``, ``goal_open``, ``conditions_immutable``, ``goal_required``,
``loop_locked``, ``loop_exhausted``, ``no_goal``, ``condition_out_of_range``,
``unknown_condition``, ``unknown_step``, ``conditions_unmet``, ``nothing_to_close``,
``invalid_arguments``, ``too_many_steps``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from corral.errors import InvalidArguments, ToolError
from corral.runtime.goals.state import (
    FINISHED,
    ClosedCycle,
    Condition,
    Goal,
    GoalState,
    Loop,
    Outcome,
    SetBy,
    Step,
)

__all__ = [
    "MAX_STEPS",
    "Change",
    "LedgerDraft",
    "apply_todos",
    "clear_cycle",
    "set_goal",
]

MAX_STEPS = 100
"""Steps a todo list may hold at once."""

AGENT = SetBy(kind="agent")


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerDraft:
    """A cycle closed by this change, to store as a ledger entry."""

    version: int
    outcome: Outcome
    entry: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class Change:
    """The state after a call, the cycles it closed, and what it did in words."""

    state: GoalState
    archived: list[LedgerDraft] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _refuse(code: str, message: str, **data: Any) -> ToolError:
    return ToolError(message, code=code, data=data)


def _archive(change: Change, outcome: Outcome, *, closed_by: str, now: str) -> None:
    state = change.state
    version = state.versions + 1
    goal = state.goal
    if goal is not None:
        title = goal.text
    else:
        title = f"todo list ({len(state.steps)} steps)"
    entry = {
        "version": version,
        "outcome": outcome,
        "goal": goal.to_json() if goal else None,
        "todos": [s.to_json() for s in state.steps],
        "opened_at": goal.opened_at if goal else state.list_opened_at,
        "closed_at": now,
        "closed_by": closed_by,
    }
    change.archived.append(LedgerDraft(version=version, outcome=outcome, entry=entry))
    state.closed.append(ClosedCycle(version=version, outcome=outcome, title=title))
    state.goal = None
    state.steps = []
    state.next_step = 1
    state.list_opened_at = ""
    change.notes.append(f"cycle v{version} {outcome}: {title!r} archived to the ledger")


def _settle(change: Change, *, closed_by: str, now: str) -> bool:
    """Archive a goal whose conditions are all met, or a finished goal-less list."""
    state = change.state
    goal = state.goal
    if goal is not None:
        if goal.conditions and goal.fully_met:
            _archive(change, "achieved", closed_by=closed_by, now=now)
            return True
        return False
    if state.steps and all(s.status in FINISHED for s in state.steps):
        _archive(change, "completed", closed_by=closed_by, now=now)
        return True
    return False


def _texts(items: Sequence[Any], what: str) -> list[str]:
    texts = [" ".join(str(t).split()) for t in items]
    if any(not t for t in texts):
        raise InvalidArguments(f"every {what} needs some text")
    if len(set(texts)) != len(texts):
        raise InvalidArguments(f"{what}s must differ from each other; drop the repeated one")
    return texts


def _add_steps(state: GoalState, texts: Sequence[str], now: str) -> None:
    if len(state.steps) + len(texts) > MAX_STEPS:
        raise _refuse(
            "too_many_steps",
            f"a todo list holds at most {MAX_STEPS} steps; it has {len(state.steps)}. Remove "
            "finished or obsolete steps first, or plan coarser steps",
        )
    if not state.steps and texts:
        state.list_opened_at = now
    for text in texts:
        state.steps.append(Step(id=state.next_step, text=text))
        state.next_step += 1


def _set_loop(state: GoalState, bound: int, by: SetBy, *, agent: bool) -> None:
    loop = state.loop
    if loop is not None and loop.bound == bound:
        return
    if agent and loop is not None and loop.set_by.locked:
        raise _refuse(
            "loop_locked",
            f"the loop bound of {loop.bound} cycles was set by {loop.set_by.kind} and is locked "
            "to you; work within it",
        )
    first = loop.first_version if loop is not None else state.cycle
    state.loop = Loop(bound=bound, first_version=first, set_by=by)


def _open_goal(state: GoalState, text: str, conditions: Sequence[str], by: SetBy, now: str) -> None:
    state.goal = Goal(
        text=text,
        conditions=[Condition(text=c) for c in conditions],
        set_by=by,
        opened_at=now,
    )


def _plan(change: Change, plan: Mapping[str, Any], now: str) -> None:
    state = change.state
    text = plan.get("goal")
    conditions = _texts(plan["conditions"], "condition") if "conditions" in plan else None
    goal = state.goal
    if text is not None:
        text = " ".join(str(text).split())
        if goal is not None:
            current = [c.text for c in goal.conditions]
            if text == goal.text:
                if conditions is not None and conditions != current:
                    raise _refuse(
                        "conditions_immutable",
                        "the acceptance conditions of the open goal cannot change; mark them "
                        "met as you meet them, or close the goal and plan a new one",
                        conditions=current,
                    )
            elif goal.set_by.locked:
                raise _refuse(
                    "goal_locked",
                    f"the open goal {goal.text!r} {goal.set_by.marker()} cannot be replaced by "
                    "you; work towards it, and tell the user if it no longer makes sense",
                )
            else:
                raise _refuse(
                    "goal_open",
                    f'goal {goal.text!r} is still open; to replace it, send close: "cleared" '
                    '(or "achieved") with this plan in the same call',
                )
        else:
            if state.loop_exhausted():
                assert state.loop is not None
                raise _refuse(
                    "loop_exhausted",
                    f"the loop bound of {state.loop.bound} cycles is used up; do not open "
                    "another cycle: report to the user what was done and what is left",
                )
            _open_goal(state, text, conditions or [], AGENT, now)
            change.notes.append(f"goal opened for cycle {state.cycle}")
    elif conditions is not None:
        if goal is None:
            raise _refuse(
                "goal_required",
                "acceptance conditions belong to a goal: send plan.goal together with them",
            )
        if conditions != [c.text for c in goal.conditions]:
            raise _refuse(
                "conditions_immutable",
                "the acceptance conditions of the open goal cannot change; mark them met as "
                "you meet them, or close the goal and plan a new one",
                conditions=[c.text for c in goal.conditions],
            )
    if "loop" in plan:
        _set_loop(state, int(plan["loop"]), AGENT, agent=True)
    if plan.get("steps"):
        texts = _texts(plan["steps"], "step")
        _add_steps(state, texts, now)
        change.notes.append(f"{len(texts)} step(s) added")


def _condition_index(goal: Goal, ref: Any) -> int:
    count = len(goal.conditions)
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        raise InvalidArguments(f"condition {ref!r} is neither a number nor a condition's text")
    if isinstance(ref, int):
        if not 1 <= ref <= count:
            raise _refuse(
                "condition_out_of_range",
                f"condition {ref} does not exist: the goal has {count} condition(s), numbered "
                f"1 to {count}; nothing was marked",
                conditions=count,
            )
        return ref - 1
    wanted = " ".join(ref.split())
    for index, condition in enumerate(goal.conditions):
        if condition.text == wanted:
            return index
    raise _refuse(
        "unknown_condition",
        f"no condition reads exactly {ref!r}; use its number or its exact text as the prompt "
        "lists it; nothing was marked",
        conditions=[c.text for c in goal.conditions],
    )


def _mark(change: Change, mark: Mapping[str, Any]) -> None:
    state = change.state
    for item in mark.get("steps") or ():
        step = state.step(int(item["id"]))
        if step is None:
            known = ", ".join(str(s.id) for s in state.steps) or "none"
            raise _refuse(
                "unknown_step",
                f"step {item['id']} does not exist (steps now: {known}); nothing was changed",
            )
        if item.get("remove"):
            state.steps.remove(step)
            continue
        if "status" not in item and "text" not in item:
            raise InvalidArguments(
                f"the change to step {step.id} needs status, text or remove: true"
            )
        if "text" in item:
            step.text = _texts([item["text"]], "step")[0]
        if "status" in item:
            step.status = item["status"]
    refs = list(mark.get("conditions") or ())
    if not refs:
        return
    goal = state.goal
    if goal is None:
        raise _refuse(
            "no_goal",
            "there is no open goal whose conditions could be marked; plan a goal first",
        )
    indexes = [_condition_index(goal, ref) for ref in refs]  # all resolve, or none applies
    for index in indexes:
        goal.conditions[index].met = True


def _close(change: Change, how: str, *, closed_by: str, now: str) -> None:
    state = change.state
    goal = state.goal
    if how == "achieved":
        if goal is None:
            raise _refuse(
                "no_goal" if state.steps else "nothing_to_close",
                'close: "achieved" closes an open goal, and none is open; a list without a '
                "goal archives itself once every step is done, or drop it with close: "
                '"cleared"',
            )
        unmet = [i for i, c in enumerate(goal.conditions, start=1) if not c.met]
        if unmet:
            raise _refuse(
                "conditions_unmet",
                f"the goal is not achieved: condition(s) {', '.join(map(str, unmet))} are not "
                "met yet; mark them in the same call once they are",
                unmet=unmet,
            )
        _archive(change, "achieved", closed_by=closed_by, now=now)
        return
    if goal is not None:
        if goal.set_by.locked:
            raise _refuse(
                "goal_locked",
                f"the goal {goal.text!r} {goal.set_by.marker()} cannot be cleared by you; work "
                "towards it, and tell the user if it is obsolete",
            )
        _archive(change, "cleared", closed_by=closed_by, now=now)
        return
    if not state.steps:
        raise _refuse("nothing_to_close", "no goal and no todo list are open; nothing to close")
    _archive(change, "cleared", closed_by=closed_by, now=now)


def apply_todos(state: GoalState, args: Mapping[str, Any], *, now: str) -> Change:
    """Apply one ``todos`` call by the agent; the input state is left untouched."""
    change = Change(state=state.copy())
    plan = args.get("plan") or {}
    mark = args.get("mark") or {}
    close = args.get("close")
    if close is None:
        _plan(change, plan, now)
        _mark(change, mark)
        _settle(change, closed_by="agent", now=now)
        return change
    _mark(change, mark)
    ended = _settle(change, closed_by="agent", now=now)
    if not ended:
        _close(change, close, closed_by="agent", now=now)
    _plan(change, plan, now)
    return change


def set_goal(
    state: GoalState,
    text: str,
    *,
    conditions: Sequence[str],
    steps: Sequence[str],
    loop: int | None,
    by: SetBy,
    replace: bool,
    now: str,
) -> Change:
    """A person or a workflow sets the goal (locked to the agent unless ``by.evolve``)."""
    change = Change(state=state.copy())
    current = change.state.goal
    if current is not None:
        if not replace:
            raise _refuse(
                "goal_open",
                f"goal {current.text!r} is open; replace it explicitly (replace=True, "
                "--replace) to clear it first",
            )
        _archive(change, "cleared", closed_by=_who(by), now=now)
    goal_text = " ".join(text.split())
    if not goal_text:
        raise InvalidArguments("a goal needs some text")
    _open_goal(change.state, goal_text, _texts(conditions, "condition"), by, now)
    if loop is not None:
        if loop < 1:
            raise InvalidArguments("a loop bound counts cycles: 1 or more")
        change.state.loop = None
        _set_loop(change.state, loop, by, agent=False)
    _add_steps(change.state, _texts(steps, "step"), now)
    change.notes.append(f"goal set for cycle {change.state.cycle} by {_who(by)}")
    return change


def clear_cycle(state: GoalState, *, by: SetBy, now: str) -> Change:
    """A person clears the open goal (or list) and the loop bound, whoever set them."""
    change = Change(state=state.copy())
    if not change.state.empty:
        _archive(change, "cleared", closed_by=_who(by), now=now)
    elif change.state.loop is None:
        raise _refuse("nothing_to_close", "no goal, todo list or loop bound is open")
    change.state.loop = None
    return change


def _who(by: SetBy) -> str:
    return f"{by.kind}:{by.name}" if by.name else by.kind
