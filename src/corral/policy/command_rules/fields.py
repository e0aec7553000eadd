"""Rule fields as a file spells them (either syntax) turned into rules, checked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corral.policy.command_rules.model import (
    DECISIONS,
    Decision,
    HostExecutable,
    PrefixRule,
    RuleError,
    RuleOrigin,
    ToolRule,
    example_words,
)

__all__ = ["host_executable_from", "prefix_rule_from", "tool_rule_from"]

_PREFIX_FIELDS = ("pattern", "decision", "justification", "match", "not_match")
_TOOL_FIELDS = ("tool", "when", "decision", "justification")


def prefix_rule_from(fields: Mapping[str, Any], origin: RuleOrigin) -> PrefixRule:
    """A prefix rule from its fields, its inline examples checked."""
    _known(fields, _PREFIX_FIELDS, "prefix_rule")
    pattern = fields.get("pattern")
    if not isinstance(pattern, list) or not pattern:
        raise RuleError("pattern must be a list of at least one word, e.g. ['git', 'status']")
    words: list[str | tuple[str, ...]] = []
    for word in pattern:
        if isinstance(word, str) and word:
            words.append(word)
        elif isinstance(word, list) and word and all(isinstance(w, str) and w for w in word):
            words.append(tuple(word))
        else:
            raise RuleError(f"pattern word {word!r} must be a non-empty string or a list of them")
    rule = PrefixRule(
        pattern=tuple(words),
        decision=_decision(fields),
        justification=_text(fields, "justification"),
        match=_examples(fields, "match"),
        not_match=_examples(fields, "not_match"),
        origin=origin,
    )
    rule.check_examples()
    return rule


def tool_rule_from(fields: Mapping[str, Any], origin: RuleOrigin) -> ToolRule:
    _known(fields, _TOOL_FIELDS, "tool_rule")
    tool = fields.get("tool")
    if not isinstance(tool, str) or not tool:
        raise RuleError("tool_rule needs tool='<tool name>'")
    when = fields.get("when", {})
    if not isinstance(when, dict) or not all(isinstance(v, str) for v in when.values()):
        raise RuleError("when must map argument names to glob strings, e.g. {'url': 'https://x/*'}")
    return ToolRule(
        tool=tool,
        when=when,
        decision=_decision(fields),
        justification=_text(fields, "justification"),
        origin=origin,
    )


def host_executable_from(fields: Mapping[str, Any], origin: RuleOrigin) -> HostExecutable:
    _known(fields, ("name", "paths"), "host_executable")
    name, paths = fields.get("name"), fields.get("paths", [])
    if not isinstance(name, str):
        raise RuleError("host_executable needs name='<program name>'")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise RuleError("host_executable paths must be a list of absolute paths")
    return HostExecutable(name=name, paths=tuple(paths), origin=origin)


def _known(fields: Mapping[str, Any], allowed: tuple[str, ...], call: str) -> None:
    for name in fields:
        if name not in allowed:
            raise RuleError(f"{call}() has no field {name!r}; use {', '.join(allowed)}")


def _decision(fields: Mapping[str, Any]) -> Decision:
    decision = fields.get("decision", "allow")
    for known in DECISIONS:
        if decision == known:
            return known
    raise RuleError(f"unknown decision {decision!r}; use one of {', '.join(DECISIONS)}")


def _text(fields: Mapping[str, Any], name: str) -> str:
    value = fields.get(name, "")
    if not isinstance(value, str):
        raise RuleError(f"{name} must be a string")
    return value


def _examples(fields: Mapping[str, Any], name: str) -> tuple[tuple[str, ...], ...]:
    value = fields.get(name, [])
    if not isinstance(value, list):
        raise RuleError(f"{name} must be a list of examples (strings or lists of words)")
    out: list[tuple[str, ...]] = []
    for example in value:
        if isinstance(example, str) or (
            isinstance(example, list) and all(isinstance(w, str) for w in example)
        ):
            try:
                out.append(example_words(example))
            except ValueError as exc:
                raise RuleError(f"{name} example {example!r} cannot be split: {exc}") from None
        else:
            raise RuleError(f"{name} example {example!r} must be a string or a list of words")
    return tuple(out)
