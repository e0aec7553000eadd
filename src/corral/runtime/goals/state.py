"""A conversation's goal state: the open goal, its todo list, the loop bound, closed cycles.

Stored as one JSON document per conversation (``conversation_goals``); every closed cycle
is also a versioned entry of the session ledger (``ledger_entries``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = [
    "ClosedCycle",
    "Condition",
    "Goal",
    "GoalState",
    "Loop",
    "Outcome",
    "SetBy",
    "Step",
    "StepStatus",
]

StepStatus = Literal["pending", "in_progress", "done", "skipped"]
Outcome = Literal["achieved", "cleared", "completed"]
"""How a cycle closed: its goal was achieved, it was cleared, or its goal-less list was
completed."""
FINISHED: frozenset[str] = frozenset({"done", "skipped"})


@dataclass(slots=True, kw_only=True)
class SetBy:
    """Who set a goal (or a loop bound): the agent itself, a person, or a workflow."""

    kind: Literal["agent", "user", "workflow"]
    name: str | None = None
    """The person's or the workflow's name."""
    evolve: bool = False
    """A workflow template with ``evolve: "agent"``: the agent may clear or replace it."""

    @property
    def locked(self) -> bool:
        """Locked to the agent: it works towards it but may not clear or replace it."""
        return self.kind != "agent" and not self.evolve

    def marker(self) -> str:
        if self.kind == "agent":
            return "[set by you]"
        who = f"{self.kind} {self.name}" if self.name else self.kind
        return f"[set by {who} — locked]" if self.locked else f"[set by {who}]"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "evolve": self.evolve}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SetBy:
        kind = raw.get("kind", "agent")
        return cls(
            kind=cast(Literal["agent", "user", "workflow"], kind),
            name=raw.get("name"),
            evolve=bool(raw.get("evolve", False)),
        )


@dataclass(slots=True, kw_only=True)
class Condition:
    text: str
    met: bool = False


@dataclass(slots=True, kw_only=True)
class Goal:
    text: str
    conditions: list[Condition] = field(default_factory=list)
    set_by: SetBy = field(default_factory=lambda: SetBy(kind="agent"))
    opened_at: str = ""

    @property
    def fully_met(self) -> bool:
        """Every condition met (True for a goal without conditions)."""
        return all(c.met for c in self.conditions)

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "conditions": [{"text": c.text, "met": c.met} for c in self.conditions],
            "set_by": self.set_by.to_json(),
            "opened_at": self.opened_at,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Goal:
        return cls(
            text=raw["text"],
            conditions=[
                Condition(text=c["text"], met=bool(c.get("met"))) for c in raw.get("conditions", [])
            ],
            set_by=SetBy.from_json(raw.get("set_by") or {}),
            opened_at=raw.get("opened_at", ""),
        )


@dataclass(slots=True, kw_only=True)
class Step:
    id: int
    text: str
    status: StepStatus = "pending"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "status": self.status}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Step:
        return cls(id=int(raw["id"]), text=raw["text"], status=raw.get("status", "pending"))


@dataclass(slots=True, kw_only=True)
class Loop:
    """How many cycles may be opened, counted from cycle ``first_version``."""

    bound: int
    first_version: int
    set_by: SetBy = field(default_factory=lambda: SetBy(kind="agent"))

    def to_json(self) -> dict[str, Any]:
        return {
            "bound": self.bound,
            "first_version": self.first_version,
            "set_by": self.set_by.to_json(),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Loop:
        return cls(
            bound=int(raw["bound"]),
            first_version=int(raw["first_version"]),
            set_by=SetBy.from_json(raw.get("set_by") or {}),
        )


@dataclass(slots=True, kw_only=True)
class ClosedCycle:
    version: int
    outcome: Outcome
    title: str

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "outcome": self.outcome, "title": self.title}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ClosedCycle:
        return cls(
            version=int(raw["version"]),
            outcome=cast(Outcome, raw["outcome"]),
            title=raw.get("title", ""),
        )


@dataclass(slots=True, kw_only=True)
class GoalState:
    goal: Goal | None = None
    steps: list[Step] = field(default_factory=list)
    next_step: int = 1
    loop: Loop | None = None
    closed: list[ClosedCycle] = field(default_factory=list)
    """The closed cycles, oldest first (their full entries are in the ledger)."""
    list_opened_at: str = ""
    """When the current todo list got its first step (for a list without a goal)."""

    @property
    def versions(self) -> int:
        """How many cycles have closed: the next one closes as version ``versions + 1``."""
        return self.closed[-1].version if self.closed else 0

    @property
    def cycle(self) -> int:
        """The number of the cycle now open (or about to open)."""
        return self.versions + 1

    @property
    def empty(self) -> bool:
        return self.goal is None and not self.steps

    def loop_closed(self) -> int:
        """Cycles closed since the loop bound was set (0 without a bound)."""
        if self.loop is None:
            return 0
        return max(0, self.versions - self.loop.first_version + 1)

    def loop_exhausted(self) -> bool:
        """Every cycle the loop bound allows has closed: no new goal may open."""
        return self.loop is not None and self.loop_closed() >= self.loop.bound

    def step(self, step_id: int) -> Step | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def copy(self) -> GoalState:
        return copy.deepcopy(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "goal": self.goal.to_json() if self.goal else None,
            "steps": [s.to_json() for s in self.steps],
            "next_step": self.next_step,
            "loop": self.loop.to_json() if self.loop else None,
            "closed": [c.to_json() for c in self.closed],
            "list_opened_at": self.list_opened_at,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> GoalState:
        if not raw:
            return cls()
        return cls(
            goal=Goal.from_json(raw["goal"]) if raw.get("goal") else None,
            steps=[Step.from_json(s) for s in raw.get("steps", [])],
            next_step=int(raw.get("next_step", 1)),
            loop=Loop.from_json(raw["loop"]) if raw.get("loop") else None,
            closed=[ClosedCycle.from_json(c) for c in raw.get("closed", [])],
            list_opened_at=raw.get("list_opened_at", ""),
        )
