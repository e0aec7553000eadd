"""What a delegate child may reach: the parent's visible tools, narrowed, never widened.

Every name the call asks for in ``tools`` is answered: it survives, or it is dropped with
the first reason that applies, in this order — removed by the call's own ``blocked_tools``;
not in the subagent's catalog (a tool hidden from the caller and a tool that does not exist
read the same, so a call cannot probe for hidden tools); barred from every subagent; outside
the chosen agent's own allowed tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from corral.tools.context import Narrowing
from corral.tools.registry import LoadedTool
from corral.tools.selection import AgentSelection

__all__ = ["Reach", "child_reach"]

NOT_IN_CATALOG = "not in the subagent's catalog"
BARRED = "barred from every subagent"
BLOCKED = "removed by this call's blocked_tools"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reach:
    narrowing: Narrowing
    """What the child's run stores and the pipeline applies on every call it makes."""
    granted: tuple[str, ...]
    """The names of ``tools`` that survive (empty when ``tools`` was omitted)."""
    dropped: dict[str, str]
    """Each name of ``tools`` that did not survive, with its reason."""

    @property
    def empty(self) -> bool:
        """True when the call named tools and none of them survived."""
        return bool(self.dropped) and not self.granted

    def describe(self) -> str | None:
        if not self.dropped:
            return None
        parts = [f"{name!r} ({reason})" for name, reason in self.dropped.items()]
        return "Tools not given to the subagent: " + "; ".join(parts) + "."

    def to_json(self) -> dict[str, object]:
        return {"granted": list(self.granted), "dropped": dict(self.dropped)}


def child_reach(
    *,
    parent_visible: Sequence[LoadedTool],
    parent_narrowing: Narrowing,
    agent: AgentSelection,
    tools: Sequence[str] | None,
    blocked_tools: Sequence[str],
    disabled_packages: Sequence[str],
) -> Reach:
    catalog = {tool.name: tool for tool in parent_visible}
    blocked = frozenset(blocked_tools)
    granted: list[str] = []
    dropped: dict[str, str] = {}
    for name in tools or ():
        tool = catalog.get(name)
        if name in blocked:
            dropped[name] = BLOCKED
        elif tool is None:
            dropped[name] = NOT_IN_CATALOG
        elif not tool.spec.subagents:
            dropped[name] = BARRED
        elif agent.refusal(tool) is not None:
            dropped[name] = f"outside agent {agent.agent!r}'s allowed tools"
        else:
            granted.append(name)
    allowed = frozenset(granted) if tools is not None else frozenset(catalog)
    own = Narrowing(
        tools=allowed,
        blocked_tools=blocked,
        disabled_packages=frozenset(disabled_packages),
        subagent=True,
    )
    return Reach(narrowing=own.within(parent_narrowing), granted=tuple(granted), dropped=dropped)
