"""The effective budget of a run: the tightest of its agent's, its permission profile's
(live setting ``budgets``), its conversation's (set by the owner; a ``delegate`` call's or
a workflow's budget is its child conversation's) and what its parent run has left."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corral.errors import UsageError
from corral.runtime.budgets.limits import Budget, parse_budget, tightest

__all__ = ["LIVE_KEY", "check_live_budgets", "configured_budgets", "effective_budget"]

LIVE_KEY = "budgets"


def configured_budgets(value: object) -> tuple[dict[str, Budget], dict[str, Budget]]:
    """The agents' and the profiles' budgets in the live setting (a UsageError says what
    is wrong)."""
    if not isinstance(value, Mapping):
        raise UsageError(
            'live setting budgets must be {"agents": {NAME: LIMITS}, "profiles": {NAME: LIMITS}}'
        )
    unknown = sorted(str(k) for k in value if k not in ("agents", "profiles"))
    if unknown:
        raise UsageError(
            f"live setting budgets has no section {', '.join(map(repr, unknown))}; "
            "use agents and profiles"
        )
    sections: list[dict[str, Budget]] = []
    for section in ("agents", "profiles"):
        raw = value.get(section) or {}
        if not isinstance(raw, Mapping):
            raise UsageError(f"live setting budgets.{section} must map names to limits")
        sections.append(
            {
                str(name): parse_budget(limits, where=f"budgets.{section}.{name}")
                for name, limits in raw.items()
            }
        )
    return sections[0], sections[1]


def check_live_budgets(value: Any) -> None:
    configured_budgets(value)


def effective_budget(
    live: Mapping[str, Any],
    *,
    agent: str,
    profile: str,
    conversation: Budget,
    parent_left: Budget | None,
) -> Budget:
    try:
        agents, profiles = configured_budgets(live.get(LIVE_KEY) or {})
    except UsageError:  # refused on save; a stored value from elsewhere counts as none
        agents, profiles = {}, {}
    return tightest(
        b
        for b in (agents.get(agent), profiles.get(profile), conversation, parent_left)
        if b is not None
    )
