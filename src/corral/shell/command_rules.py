"""Permission rules held against what the command analysis found: every command of a script
(inside ``bash -c``, ``find -exec``, ``xargs`` and functions too) gets its own decision, and
the script's is the strictest of them, or none when a command no rule covers is left to the
profile.

Wrappers are seen through as the analysis resolves them (``env X=1 timeout 5 git log`` is
``git log``). ``sudo`` and its kin are never allowed by a rule (the analysis refuses them
anyway). A command written with a path (``/usr/bin/git``) matches a ``git`` rule only when
``git`` on the search path is the same program. A tool's global options before its
subcommand are skipped (``git -C repo log`` is ``git log``), so a family rule covers them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from corral.policy.command_rules import Decision, PrefixRule, RuleSet, strictest
from corral.policy.command_rules.model import STRICTNESS

if TYPE_CHECKING:
    # Only for hints: the analyser's tables load with the first command analysed.
    from corral.shell.analysis import Analysis, Command

__all__ = [
    "CommandDecision",
    "RulesJudgement",
    "family_of",
    "judge_analysis",
    "rule_words",
    "same_program",
]

ScriptDecision = Decision | Literal["unmatched"]

_NEVER_ALLOWED = frozenset({"sudo", "su", "doas", "pkexec", "sudoedit", "run0", "runuser"})

_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})

# Builtins that change nothing outside the shell itself: no rule is needed for them.
_INERT_BUILTINS = frozenset(
    {"read", "test", "[", "[[", "true", "false", ":", "shift", "local", "break", "continue",
     "return", "exit", "wait"}
)  # fmt: skip

_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})

# Options a program takes before its subcommand: those followed by a value, and flags.
_GLOBAL_OPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "git": (
        frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}),
        frozenset({"--no-pager", "-P", "--paginate", "-p", "--bare", "--no-replace-objects"}),
    ),
    "docker": (frozenset({"-H", "--host", "--context", "--config", "-c"}), frozenset()),
    "kubectl": (frozenset({"-n", "--namespace", "--context", "--kubeconfig"}), frozenset()),
    "npm": (frozenset({"--prefix", "-C"}), frozenset({"-s", "--silent", "-q"})),
    "cargo": (frozenset({"-C", "--manifest-path"}), frozenset({"-q", "--quiet", "-v"})),
    "make": (frozenset({"-C", "-f", "--file", "--directory"}), frozenset({"-s", "-k"})),
    "go": (frozenset({"-C"}), frozenset()),
    "gh": (frozenset({"-R", "--repo"}), frozenset()),
}

# Programs whose first argument names what they do: their family is two words.
_SUBCOMMAND_PROGRAMS = frozenset(
    {
        *_GLOBAL_OPTIONS,
        "apt", "apt-get", "brew", "bun", "conda", "deno", "dnf", "gcloud", "helm", "hg",
        "mvn", "pip", "pip3", "pnpm", "poetry", "podman", "rustup", "svn", "systemctl",
        "terraform", "uv", "yarn", "aws", "az", "jj", "just", "tox", "nox",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandDecision:
    """One command the analysis found and what the rules say about it."""

    words: tuple[str | None, ...]
    """The command as matched: the program as written, then its arguments (``None`` where
    a word is not known statically)."""
    decision: Decision | None
    rules: tuple[PrefixRule, ...] = ()
    """The matching rules, strictest first."""
    family: tuple[str, ...] = ()
    """The prefix an approve-and-remember proposes for it."""
    note: str = ""

    @property
    def rule(self) -> PrefixRule | None:
        return self.rules[0] if self.rules else None

    def to_json(self) -> dict[str, Any]:
        return {
            "command": " ".join(w if w is not None else "…" for w in self.words),
            "decision": self.decision,
            "rule": self.rule.to_json() if self.rule is not None else None,
            "family": list(self.family),
            "note": self.note,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RulesJudgement:
    """The decisions on every command of a script and the script's own."""

    commands: tuple[CommandDecision, ...]

    @property
    def decision(self) -> ScriptDecision:
        """``forbidden`` when one command is, ``prompt`` when one asks, ``allow`` only when
        every command is allowed by a rule, else ``unmatched`` (the profile decides)."""
        if not self.commands:
            return "unmatched"
        decisions = [c.decision for c in self.commands]
        worst = strictest(d for d in decisions if d is not None)
        if worst in ("forbidden", "prompt"):
            return worst
        return "allow" if None not in decisions else "unmatched"

    @property
    def deciding(self) -> CommandDecision | None:
        """The command whose rule made the decision (the first of the strictest)."""
        wanted = self.decision
        if wanted == "unmatched":
            return None
        return next((c for c in self.commands if c.decision == wanted), None)

    @property
    def uncovered(self) -> tuple[CommandDecision, ...]:
        """Commands no rule allows: what an approve-and-remember would add."""
        return tuple(c for c in self.commands if c.decision != "allow")

    def reason(self) -> str:
        deciding = self.deciding
        if deciding is None or deciding.rule is None:
            return ""
        rule = deciding.rule
        why = f": {rule.justification}" if rule.justification else ""
        shown = " ".join(w if w is not None else "…" for w in deciding.words)
        where = rule.origin.describe()
        return f"rule {rule.show()!r} ({where}) says {rule.decision} for {shown!r}{why}"

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "commands": [c.to_json() for c in self.commands]}


Resolver = Callable[[str], str | None]
"""A program name to its absolute path on the search path (``shutil.which``)."""


def same_program(written: str, name: str, which: Resolver = shutil.which) -> bool:
    """Is the program written as a path (``/usr/bin/git``) the one ``name`` runs?"""
    found = which(name)
    if found is None:
        return False
    try:
        return os.path.realpath(found) == os.path.realpath(written)
    except OSError:
        return False


def rule_words(command: Command) -> tuple[str | None, ...]:
    """The words rules are held against: the program as written, its arguments without the
    global options a known tool takes before its subcommand."""
    words = tuple(word.value for word in command.argv)
    if not words:
        return (command.name,)
    options = _GLOBAL_OPTIONS.get(command.name)
    if options is None:
        return words
    with_value, flags = options
    rest = list(words[1:])
    while rest and rest[0] is not None and rest[0].startswith("-"):
        head = rest[0]
        if head in with_value and len(rest) > 1:
            del rest[:2]
        elif head in flags or (head.split("=", 1)[0] in with_value and "=" in head):
            del rest[0]
        else:
            break
    return (words[0], *rest)


def family_of(command: Command) -> tuple[str, ...]:
    """The prefix to remember for ``command``: its name, and for a tool with subcommands
    the subcommand (``git -C repo log --oneline`` → ``git log``)."""
    return _family(command.name, rule_words(command))


def _family(name: str, words: tuple[str | None, ...]) -> tuple[str, ...]:
    if name in _SUBCOMMAND_PROGRAMS and len(words) > 1:
        sub = words[1]
        if sub is not None and not sub.startswith("-"):
            return (name, sub)
    return (name,)


def judge_analysis(
    analysis: Analysis, rules: RuleSet, *, which: Resolver = shutil.which
) -> RulesJudgement:
    """The rules' decision on every command ``analysis`` found."""
    decisions = [
        _judge(command, rules, which)
        for command in analysis.commands
        if not (command.function or _shell_string(command) or command.name in _INERT_BUILTINS)
    ]
    return RulesJudgement(commands=tuple(decisions))


def _judge(command: Command, rules: RuleSet, which: Resolver) -> CommandDecision:
    words = rule_words(command)
    family = _family(command.name, words)
    if not rules:
        return CommandDecision(words=words, decision=None, family=family)
    written = words[0]
    matched = rules.matching_words(words)
    if written is not None and written != command.name and "/" in written:
        listed = rules.host_paths(command.name)
        if (
            os.path.normpath(written) in {os.path.expanduser(p) for p in listed}
            if listed is not None
            else same_program(written, command.name, which)
        ):
            matched += rules.matching_words((command.name, *words[1:]))
    matched.sort(key=lambda r: -STRICTNESS[r.decision])
    decision = matched[0].decision if matched else None
    note = ""
    if decision == "allow" and _elevated(command):
        decision, note = "prompt", "a command run through sudo is never allowed by a rule"
    elif decision == "allow" and _writes_through_redirect(command):
        decision, note = None, "it writes a file through a redirect, which a rule does not allow"
    return CommandDecision(
        words=words, decision=decision, rules=tuple(matched), family=family, note=note
    )


def _shell_string(command: Command) -> bool:
    """``bash -c '…'`` with a string the analysis read: the commands in it are judged."""
    if command.name not in _SHELLS:
        return False
    values = [word.value for word in command.argv[1:]]
    return "-c" in values and None not in values[values.index("-c") :]


def _writes_through_redirect(command: Command) -> bool:
    return any(
        r.access == "write" and r.target.value not in _HARMLESS_TARGETS for r in command.redirects
    )


def _elevated(command: Command) -> bool:
    return command.name in _NEVER_ALLOWED or any(w in _NEVER_ALLOWED for w in command.wrappers)
