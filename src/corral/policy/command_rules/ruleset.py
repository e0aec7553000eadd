"""The rules in force, indexed for matching: prefix rules by program name, tool rules by
tool. Built once per change of the rules, so a lookup costs a dict access per command."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from corral.policy.command_rules.model import HostExecutable, PrefixRule, ToolRule

__all__ = ["RuleSet"]


class RuleSet:
    """Immutable once built; an empty set answers every lookup with nothing."""

    __slots__ = ("_by_program", "_by_tool", "hosts", "rules")

    def __init__(self, rules: Iterable[PrefixRule | ToolRule | HostExecutable] = ()) -> None:
        given = tuple(rules)
        self.rules: tuple[PrefixRule | ToolRule, ...] = tuple(
            r for r in given if not isinstance(r, HostExecutable)
        )
        self.hosts: tuple[HostExecutable, ...] = tuple(
            r for r in given if isinstance(r, HostExecutable)
        )
        self._by_program: dict[str, list[PrefixRule]] = {}
        self._by_tool: dict[str, list[ToolRule]] = {}
        for rule in self.rules:
            if isinstance(rule, PrefixRule):
                for name in rule.first:
                    self._by_program.setdefault(name, []).append(rule)
            else:
                self._by_tool.setdefault(rule.tool, []).append(rule)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __add__(self, other: RuleSet) -> RuleSet:
        return RuleSet((*self.rules, *self.hosts, *other.rules, *other.hosts))

    def host_paths(self, name: str) -> tuple[str, ...] | None:
        """The absolute paths ``host_executable`` lists for ``name``; None when none does."""
        found = [path for host in self.hosts if host.name == name for path in host.paths]
        return tuple(found) if found or any(h.name == name for h in self.hosts) else None

    def for_program(self, name: str) -> Sequence[PrefixRule]:
        return self._by_program.get(name, ())

    def matching_words(self, words: Sequence[str | None]) -> list[PrefixRule]:
        """Every prefix rule ``words`` start with (``words[0]`` the program as written)."""
        if not words or words[0] is None:
            return []
        return [rule for rule in self.for_program(words[0]) if rule.matches(words)]

    def matching_tool(self, tool: str, arguments: Mapping[str, Any]) -> list[ToolRule]:
        return [rule for rule in self._by_tool.get(tool, ()) if rule.matches(tool, arguments)]

    def find(self, rule_id: str) -> PrefixRule | ToolRule | None:
        return next((rule for rule in self.rules if rule.id == rule_id), None)
