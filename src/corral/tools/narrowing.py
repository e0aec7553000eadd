"""How a run narrowed its tools: stored with the run, applied on every call it makes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Narrowing"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Narrowing:
    """How a run narrowed its tools: only ever narrower than its parent."""

    tools: frozenset[str] | None = None
    blocked_tools: frozenset[str] = frozenset()
    disabled_packages: frozenset[str] = frozenset()
    subagent: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "tools": sorted(self.tools) if self.tools is not None else None,
            "blocked_tools": sorted(self.blocked_tools),
            "disabled_packages": sorted(self.disabled_packages),
            "subagent": self.subagent,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Narrowing:
        raw = raw or {}
        tools = raw.get("tools")
        return cls(
            tools=frozenset(tools) if tools is not None else None,
            blocked_tools=frozenset(raw.get("blocked_tools") or ()),
            disabled_packages=frozenset(raw.get("disabled_packages") or ()),
            subagent=bool(raw.get("subagent", False)),
        )

    def within(self, parent: Narrowing) -> Narrowing:
        """This narrowing applied inside ``parent``: the intersection of both."""
        if self.tools is None:
            tools = parent.tools
        elif parent.tools is None:
            tools = self.tools
        else:
            tools = self.tools & parent.tools
        return Narrowing(
            tools=tools,
            blocked_tools=self.blocked_tools | parent.blocked_tools,
            disabled_packages=self.disabled_packages | parent.disabled_packages,
            subagent=self.subagent or parent.subagent,
        )
