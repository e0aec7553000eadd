"""A getopt-like reader for the options of wrapper programs.

It must find where the wrapped command starts, exactly. Where it cannot tell (an unknown
long option of a tool whose option list we do not know in full), it returns both readings
and the caller analyses the command under each, so guessing never lets a command through.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.shell.analysis._escaped import quote
from corral.shell.analysis._words import ResolvedWord

__all__ = ["OptSpec", "OptionError", "Parsed", "parse_options"]

_MAX_READINGS = 4


@dataclass(frozen=True, slots=True)
class OptSpec:
    """The options one program accepts."""

    short_arg: str = ""
    short_flags: str = ""
    short_optional: str = ""
    long_arg: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()
    numeric: bool = False
    """``-5`` is an option (``nice``)."""
    strict: bool = True
    """An unknown option is a refusal; otherwise both readings are tried."""


@dataclass(slots=True)
class Parsed:
    """One reading: the options seen and where the operands start."""

    options: list[tuple[str, ResolvedWord | None, str | None]] = field(default_factory=list)
    operands: int = 0

    def has(self, *names: str) -> bool:
        return any(name in names for name, _, _ in self.options)

    def values(self, *names: str) -> list[tuple[ResolvedWord | None, str | None]]:
        return [(word, value) for name, word, value in self.options if name in names]


class OptionError(Exception):
    """The options cannot be read statically; ``word`` is the culprit."""

    def __init__(self, word: str, reason: str) -> None:
        super().__init__(reason)
        self.word = word
        self.reason = reason


def _glued(word: ResolvedWord, value: str) -> ResolvedWord:
    """The value of ``--opt=VALUE`` or ``-oVALUE`` as a word of its own (a path, a dir…)."""
    return ResolvedWord(word.text, quote(value))


def _long(spec: OptSpec, name: str) -> str | None:
    every = spec.long_arg | spec.long_flags | spec.long_optional
    if name in every:
        return name
    matches = [full for full in every if full.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def parse_options(words: list[ResolvedWord], start: int, spec: OptSpec) -> list[Parsed]:
    """Read options from ``words[start:]``; one :class:`Parsed` per possible reading."""
    readings: list[Parsed] = []
    pending: list[tuple[int, Parsed]] = [(start, Parsed())]
    while pending:
        index, parsed = pending.pop()
        result = _parse_from(words, index, spec, parsed, pending)
        readings.append(result)
        if len(readings) + len(pending) > _MAX_READINGS:
            raise OptionError(words[min(start, len(words) - 1)].text, "too many ambiguous options")
    return readings


def _parse_from(
    words: list[ResolvedWord],
    i: int,
    spec: OptSpec,
    parsed: Parsed,
    pending: list[tuple[int, Parsed]],
) -> Parsed:
    n = len(words)
    while i < n:
        word = words[i]
        value = word.value
        if value is None or word.split:
            raise OptionError(word.text, "its value is not known before the command runs")
        if value == "--":
            i += 1
            break
        if not value.startswith("-") or value == "-":
            break
        if value.startswith("--"):
            name, eq, inline = value[2:].partition("=")
            full = _long(spec, name)
            if full is None:
                if spec.strict:
                    raise OptionError(word.text, "it is not an option this program knows")
                if not eq and i + 1 < n:
                    branch = Parsed(list(parsed.options), 0)
                    branch.options.append((name, words[i + 1], words[i + 1].value))
                    pending.append((i + 2, branch))
                given = _glued(word, inline) if eq else word
                parsed.options.append((name, given, inline if eq else None))
                i += 1
                continue
            if full in spec.long_arg:
                if eq:
                    parsed.options.append((full, _glued(word, inline), inline))
                    i += 1
                elif i + 1 < n:
                    parsed.options.append((full, words[i + 1], words[i + 1].value))
                    i += 2
                else:
                    raise OptionError(word.text, "its argument is missing")
                continue
            given = _glued(word, inline) if eq else word
            parsed.options.append((full, given, inline if eq else None))
            i += 1
            continue
        if spec.numeric and value[1:].lstrip("-").isdigit():
            parsed.options.append(("-", word, value[1:]))
            i += 1
            continue
        j = 1
        consumed_next = False
        while j < len(value):
            ch = value[j]
            if ch in spec.short_arg:
                rest = value[j + 1 :]
                if rest:
                    parsed.options.append((ch, _glued(word, rest), rest))
                elif i + 1 < n:
                    parsed.options.append((ch, words[i + 1], words[i + 1].value))
                    consumed_next = True
                else:
                    raise OptionError(word.text, "its argument is missing")
                break
            if ch in spec.short_optional:
                rest = value[j + 1 :]
                parsed.options.append((ch, _glued(word, rest) if rest else word, rest or None))
                break
            if ch in spec.short_flags:
                parsed.options.append((ch, word, None))
                j += 1
                continue
            raise OptionError(word.text, f"-{ch} is not an option this program knows")
        i += 2 if consumed_next else 1
    parsed.operands = i
    return parsed
