"""The shape of a command's file effects, and the GNU-style option scan behind it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from corral.shell.analysis._escaped import MARK
from corral.shell.analysis._types import Access
from corral.shell.analysis._words import ResolvedWord

__all__ = ["Effects", "Scan", "consumed", "option_tail", "scan_options"]


@dataclass(slots=True)
class Effects:
    """File effects of one command."""

    mutating: bool = False
    targets: list[tuple[ResolvedWord, Access]] = field(default_factory=list)
    skip: set[int] = field(default_factory=set)
    chdir: ResolvedWord | None = None
    scripts: list[ResolvedWord] = field(default_factory=list)
    destructive: list[ResolvedWord] = field(default_factory=list)
    recursive: bool = False
    text_only: bool = False


def option_tail(word: ResolvedWord, prefix: str) -> ResolvedWord:
    """The value part of a glued option word such as ``--output=FILE`` or ``-oFILE``."""
    if word.escaped.startswith(prefix):
        return ResolvedWord(word.text, word.escaped[len(prefix) :], split=word.split)
    return ResolvedWord(word.text, MARK)


@dataclass(slots=True)
class Scan:
    operands: list[int] = field(default_factory=list)
    values: dict[str, list[tuple[int, ResolvedWord]]] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)

    def get(self, *names: str) -> list[ResolvedWord]:
        return [word for name in names for _, word in self.values.get(name, [])]


def scan_options(
    argv: list[ResolvedWord], short_arg: str = "", long_arg: Iterable[str] = ()
) -> Scan:
    """GNU-style option scan (options may follow operands); unknown options are flags."""
    long_set = set(long_arg)
    out = Scan()
    i, n = 1, len(argv)
    while i < n:
        word = argv[i]
        value = word.value
        if value == "--":
            out.operands.extend(range(i + 1, n))
            break
        if value is None or not value.startswith("-") or value == "-":
            out.operands.append(i)
            i += 1
            continue
        if value.startswith("--"):
            name, eq, _ = value[2:].partition("=")
            out.flags.add(name)
            if eq:
                out.values.setdefault(name, []).append((i, option_tail(word, f"--{name}=")))
            elif name in long_set and i + 1 < n:
                out.values.setdefault(name, []).append((i + 1, argv[i + 1]))
                i += 1
            i += 1
            continue
        j = 1
        while j < len(value):
            ch = value[j]
            out.flags.add(ch)
            if ch in short_arg:
                if j + 1 < len(value):
                    out.values.setdefault(ch, []).append((i, option_tail(word, value[: j + 1])))
                elif i + 1 < n:
                    out.values.setdefault(ch, []).append((i + 1, argv[i + 1]))
                    i += 1
                break
            j += 1
        i += 1
    return out


def consumed(scan: Scan) -> set[int]:
    return {index for pairs in scan.values.values() for index, _ in pairs}
