"""Budgets: optional limits on what a run may spend, and what it spent.

A budget limits model requests, input / output / total tokens, cost in US dollars, tool
calls in total and per tool, and wall time (seconds of running time). Every limit is
optional; the effective budget of a run is the tightest of those that apply
(:func:`tightest`), and a child run gets at most its parent's remainder (:func:`remaining`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from corral.errors import UsageError

__all__ = ["COUNTERS", "Budget", "Spend", "parse_budget", "reached", "remaining", "tightest"]

COUNTERS = ("requests", "input_tokens", "output_tokens", "total_tokens", "tool_calls")
"""The whole-number limits, by the name a budget document gives them."""

_KEYS = (*COUNTERS, "cost_usd", "wall_seconds", "per_tool")

_WORDS = {
    "requests": "model requests",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "total_tokens": "total tokens",
    "tool_calls": "tool calls",
    "cost_usd": "cost (USD)",
    "wall_seconds": "seconds of wall time",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Limits; ``None`` is no limit. ``per_tool`` maps a tool name to its call limit."""

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    tool_calls: int | None = None
    cost_usd: float | None = None
    wall_seconds: float | None = None
    per_tool: Mapping[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.per_tool and all(
            getattr(self, f.name) is None for f in fields(self) if f.name != "per_tool"
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "per_tool" and getattr(self, f.name) is not None
        }
        if self.per_tool:
            out["per_tool"] = dict(self.per_tool)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Spend:
    """What a run (with its children) spent."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    wall_seconds: float = 0.0
    per_tool: Mapping[str, int] = field(default_factory=dict)

    def plus(self, other: Spend) -> Spend:
        tools = dict(self.per_tool)
        for name, count in other.per_tool.items():
            tools[name] = tools.get(name, 0) + count
        return Spend(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            tool_calls=self.tool_calls + other.tool_calls,
            cost_usd=self.cost_usd + other.cost_usd,
            wall_seconds=self.wall_seconds + other.wall_seconds,
            per_tool=tools,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["per_tool"] = dict(self.per_tool)
        out["cost_usd"] = round(self.cost_usd, 6)
        out["wall_seconds"] = round(self.wall_seconds, 3)
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Spend:
        raw = raw or {}
        return cls(
            **{k: int(raw.get(k) or 0) for k in COUNTERS},
            cost_usd=float(raw.get("cost_usd") or 0.0),
            wall_seconds=float(raw.get("wall_seconds") or 0.0),
            per_tool={str(k): int(v) for k, v in (raw.get("per_tool") or {}).items()},
        )


def parse_budget(raw: object, *, where: str = "budget") -> Budget:
    """A budget from its JSON form, e.g. ``{"total_tokens": 200000, "per_tool":
    {"execute": 40}}``; a :class:`UsageError` names what is wrong and what to write."""
    if isinstance(raw, Budget):
        return raw
    if raw is None:
        return Budget()
    if not isinstance(raw, Mapping):
        raise UsageError(
            f"{where} must be a JSON object of limits such as "
            '{"total_tokens": 200000, "cost_usd": 2.5, "per_tool": {"execute": 40}}, '
            f"not {type(raw).__name__}"
        )
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise UsageError(
            f"{where} has no limit called {', '.join(map(repr, unknown))}; "
            f"the limits are {', '.join(_KEYS)}"
        )
    values: dict[str, Any] = {}
    for key in COUNTERS:
        if raw.get(key) is not None:
            values[key] = _whole(raw[key], f"{where}.{key}")
    for key in ("cost_usd", "wall_seconds"):
        if raw.get(key) is not None:
            values[key] = _amount(raw[key], f"{where}.{key}")
    per_tool = raw.get("per_tool")
    if per_tool is not None:
        if not isinstance(per_tool, Mapping):
            raise UsageError(
                f'{where}.per_tool must map tool names to call limits, e.g. {{"execute": 40}}'
            )
        values["per_tool"] = {
            str(name): _whole(limit, f"{where}.per_tool.{name}") for name, limit in per_tool.items()
        }
    return Budget(**values)


def _whole(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{where} must be a whole number of at least 0, not {value!r}")
    return value


def _amount(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise UsageError(f"{where} must be a number of at least 0, not {value!r}")
    if value == float("inf"):
        raise UsageError(f"{where} must be finite; leave it out for no limit")
    return float(value)


def _least(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def tightest(budgets: Iterable[Budget]) -> Budget:
    """The budget that allows only what every one of ``budgets`` allows."""
    out = Budget()
    for budget in budgets:
        tools = dict(out.per_tool)
        for name, limit in budget.per_tool.items():
            tools[name] = _least(tools.get(name), limit)
        out = Budget(
            **{
                f.name: _least(getattr(out, f.name), getattr(budget, f.name))
                for f in fields(Budget)
                if f.name != "per_tool"
            },
            per_tool=tools,
        )
    return out


def remaining(budget: Budget, spent: Spend) -> Budget:
    """What is left of ``budget`` after ``spent`` (never below zero)."""
    left: dict[str, Any] = {}
    for f in fields(Budget):
        limit = getattr(budget, f.name)
        if f.name == "per_tool" or limit is None:
            continue
        left[f.name] = max(limit - getattr(spent, f.name), 0)
    tools = {
        name: max(limit - spent.per_tool.get(name, 0), 0) for name, limit in budget.per_tool.items()
    }
    return replace(Budget(**left), per_tool=tools)


def reached(budget: Budget, spent: Spend) -> str | None:
    """The first run-wide limit ``spent`` has reached, in words, or None. Per-tool limits
    never end a run: the tool is refused, the others stay usable."""
    for name in (*COUNTERS, "cost_usd", "wall_seconds"):
        limit = getattr(budget, name)
        if limit is not None and getattr(spent, name) >= limit:
            return describe(name, getattr(spent, name), limit)
    return None


def describe(name: str, spent: float, limit: float) -> str:
    """``"the limit of 100 total tokens (spent 120)"``."""
    words = _WORDS.get(name, f"calls of {name}")
    return f"the limit of {limit:g} {words} (spent {spent:g})"
