"""Permission rules: a command prefix (or a tool and argument globs) and a decision.

A :class:`PrefixRule` names a command prefix as a list of words, where a word may be a tuple
of alternatives (``["git", ("log", "status")]``); a :class:`ToolRule` names a tool and glob
patterns on its arguments. The decision is ``allow`` (run without asking), ``prompt`` (ask a
person) or ``forbidden`` (refuse, with the justification); among several matching rules the
strictest wins. A rule never widens what the profile and the URI policy allow: ``allow``
only skips the approval prompt.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from corral.errors import ConfigError

__all__ = [
    "DECISIONS",
    "STRICTNESS",
    "Decision",
    "HostExecutable",
    "PrefixRule",
    "RuleError",
    "RuleOrigin",
    "ToolRule",
    "example_words",
    "strictest",
]

Decision = Literal["allow", "prompt", "forbidden"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
STRICTNESS: dict[Decision, int] = {"allow": 0, "prompt": 1, "forbidden": 2}

Word = str | tuple[str, ...]
"""One position of a pattern: a literal word or its alternatives."""


class RuleError(ConfigError):
    """A rule, or a rule file, that cannot be used as written: names the place and reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleOrigin:
    """Where a rule came from: a file and line, or a person's approval."""

    file: str | None = None
    line: int | None = None
    remembered_by: str | None = None
    approval_id: str | None = None
    scope: str = "project"
    """``project`` (rule files, admins), ``agent`` or ``user``."""

    def describe(self) -> str:
        if self.file is not None:
            return f"{self.file}:{self.line}" if self.line else self.file
        via = f" from approval {self.approval_id}" if self.approval_id else ""
        return f"remembered by {self.remembered_by or 'someone'}{via} ({self.scope})"


def strictest(decisions: Iterable[Decision]) -> Decision | None:
    """forbidden > prompt > allow; None when there is none."""
    found: Decision | None = None
    for decision in decisions:
        if found is None or STRICTNESS[decision] > STRICTNESS[found]:
            found = decision
    return found


def example_words(example: str | Sequence[str]) -> tuple[str, ...]:
    """An inline example as words: a list as it is, a string split as the shell would."""
    if isinstance(example, str):
        return tuple(shlex.split(example))
    return tuple(example)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixRule:
    """A command prefix and what to do when a command starts with it."""

    pattern: tuple[Word, ...]
    decision: Decision = "allow"
    justification: str = ""
    match: tuple[tuple[str, ...], ...] = ()
    not_match: tuple[tuple[str, ...], ...] = ()
    origin: RuleOrigin = field(default_factory=RuleOrigin)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.pattern:
            raise RuleError("a pattern needs at least one word, e.g. ['git', 'status']")
        for word in self.pattern:
            if isinstance(word, tuple) and not word:
                raise RuleError("a list of alternatives in a pattern needs at least one word")
        if self.decision not in DECISIONS:
            raise RuleError(
                f"unknown decision {self.decision!r}; use one of {', '.join(DECISIONS)}"
            )

    @property
    def first(self) -> tuple[str, ...]:
        """The program names the rule can match."""
        head = self.pattern[0]
        return head if isinstance(head, tuple) else (head,)

    def matches(self, words: Sequence[str | None]) -> bool:
        """Do ``words`` start with the pattern? A word not known statically (``None``)
        matches nothing."""
        if len(words) < len(self.pattern):
            return False
        for want, have in zip(self.pattern, words, strict=False):
            if have is None:
                return False
            if isinstance(want, tuple):
                if have not in want:
                    return False
            elif have != want:
                return False
        return True

    def subsumes(self, other: PrefixRule) -> bool:
        """Every command ``other`` matches, this rule matches too, with the same decision."""
        if self.decision != other.decision or len(self.pattern) > len(other.pattern):
            return False
        for mine, theirs in zip(self.pattern, other.pattern, strict=False):
            mine_set = set(mine) if isinstance(mine, tuple) else {mine}
            theirs_set = set(theirs) if isinstance(theirs, tuple) else {theirs}
            if not theirs_set <= mine_set:
                return False
        return True

    def check_examples(self) -> None:
        """The inline examples are tests: refuse the rule when one fails."""
        for example in self.match:
            if not self.matches(example):
                raise RuleError(
                    f"rule {self.show()}: the match example {shlex.join(example)!r} "
                    "does not match its pattern"
                )
        for example in self.not_match:
            if self.matches(example):
                raise RuleError(
                    f"rule {self.show()}: the not_match example {shlex.join(example)!r} "
                    "matches its pattern"
                )

    def show(self) -> str:
        """The pattern as one line: ``git [log|status]``."""
        return " ".join(
            "[" + "|".join(word) + "]" if isinstance(word, tuple) else word for word in self.pattern
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "prefix",
            "pattern": [list(w) if isinstance(w, tuple) else w for w in self.pattern],
            "decision": self.decision,
            "justification": self.justification,
            "origin": self.origin.describe(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRule:
    """A tool and glob patterns on its arguments (``{"url": "https://docs.python.org/*"}``):
    a call whose every named argument matches its glob gets the decision."""

    tool: str
    when: Mapping[str, str] = field(default_factory=dict)
    decision: Decision = "allow"
    justification: str = ""
    origin: RuleOrigin = field(default_factory=RuleOrigin)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.tool:
            raise RuleError("tool_rule needs a tool name, e.g. tool='web_fetch'")
        if self.decision not in DECISIONS:
            raise RuleError(
                f"unknown decision {self.decision!r}; use one of {', '.join(DECISIONS)}"
            )

    def matches(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        if tool != self.tool:
            return False
        for name, glob in self.when.items():
            value = arguments.get(name)
            if not isinstance(value, str) or not fnmatch.fnmatchcase(value, glob):
                return False
        return True

    def show(self) -> str:
        when = ", ".join(f"{k}={v!r}" for k, v in self.when.items())
        return f"{self.tool}({when})"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "tool",
            "tool": self.tool,
            "when": dict(self.when),
            "decision": self.decision,
            "justification": self.justification,
            "origin": self.origin.describe(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class HostExecutable:
    """Codex's ``host_executable(name=..., paths=[...])``: a command written as an absolute
    path matches the rules for ``name`` only when it is one of ``paths`` (``~/`` is the
    platform's home)."""

    name: str
    paths: tuple[str, ...]
    origin: RuleOrigin = field(default_factory=RuleOrigin)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise RuleError("host_executable needs name='<program name>', without a path")
        for path in self.paths:
            if not path.startswith(("/", "~/")):
                raise RuleError(f"host_executable path {path!r} must be absolute (or ~/...)")
