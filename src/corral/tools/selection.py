"""Which tools a caller sees: narrowing layers that can only take tools away.

The visible set is every loaded tool that *every* layer admits: package state ∩ the
caller's feature grants ∩ the agent's tool selection ∩ the run's narrowing ∩ context rules.
Because a tool must pass all layers, no layer can add a tool another one removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from corral.policy.grants import Grants
from corral.tools.context import Narrowing
from corral.tools.registry import LoadedTool

__all__ = [
    "AgentSelection",
    "ContextRules",
    "FeatureGrants",
    "Layer",
    "PackageState",
    "RunNarrowing",
    "Visibility",
]


class Layer(Protocol):
    def refusal(self, tool: LoadedTool) -> str | None:
        """Why ``tool`` is hidden by this layer, or None when the layer admits it."""
        ...


@dataclass(frozen=True, slots=True)
class PackageState:
    disabled: frozenset[str]

    def refusal(self, tool: LoadedTool) -> str | None:
        if tool.package in self.disabled:
            return f"its package {tool.package!r} is disabled"
        return None


@dataclass(frozen=True, slots=True)
class FeatureGrants:
    grants: Grants
    role: str

    def refusal(self, tool: LoadedTool) -> str | None:
        missing = self.grants.missing(tool.spec.features)
        if missing:
            return (
                f"it needs feature {', '.join(map(repr, missing))}, which role {self.role!r} lacks"
            )
        return None


@dataclass(frozen=True, slots=True)
class AgentSelection:
    """An agent's choice: ``all`` minus switched-off tools, or a frozen allowlist."""

    agent: str
    mode: Literal["all", "custom"]
    tools_off: frozenset[str] = frozenset()
    allowlist: frozenset[str] = frozenset()

    def refusal(self, tool: LoadedTool) -> str | None:
        if self.mode == "custom":
            if tool.name not in self.allowlist:
                return f"agent {self.agent!r} uses a custom tool list without it"
            return None
        if tool.name in self.tools_off:
            return f"it is switched off for agent {self.agent!r}"
        return None


@dataclass(frozen=True, slots=True)
class RunNarrowing:
    narrowing: Narrowing

    def refusal(self, tool: LoadedTool) -> str | None:
        n = self.narrowing
        if tool.package in n.disabled_packages:
            return f"this run disabled package {tool.package!r}"
        if n.tools is not None and tool.name not in n.tools:
            return "this run's tool list does not include it"
        if tool.name in n.blocked_tools:
            return "this run blocks it"
        return None


@dataclass(frozen=True, slots=True)
class ContextRules:
    subagent: bool

    def refusal(self, tool: LoadedTool) -> str | None:
        if self.subagent and not tool.spec.subagents:
            return "it never reaches a subagent: a subagent has no path to a person"
        return None


@dataclass(frozen=True, slots=True)
class Visibility:
    layers: tuple[Layer, ...]

    def refusal(self, tool: LoadedTool) -> str | None:
        for layer in self.layers:
            reason = layer.refusal(tool)
            if reason is not None:
                return reason
        return None

    def visible(self, tools: Iterable[LoadedTool]) -> list[LoadedTool]:
        return [t for t in tools if self.refusal(t) is None]
