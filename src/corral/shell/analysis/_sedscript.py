"""A conservative reader of sed scripts: the commands that run a shell or touch files.

GNU sed runs a command line with ``e COMMAND``, runs the pattern space with the ``e`` flag
of ``s``, writes files with ``w``/``W`` (and the ``w`` flag of ``s``) and reads them with
``r``/``R``. Everything else in a script only edits text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SedEffects", "read_sed"]

_NO_ARG = frozenset("=dDgGhHnNpPxFzlLqQ{}")
_TEXT = frozenset("aic")
_LABEL = frozenset(":btTv")
_FILE_READ = frozenset("rR")
_FILE_WRITE = frozenset("wW")


@dataclass(slots=True)
class SedEffects:
    """What one sed script does beyond editing text."""

    commands: list[str] = field(default_factory=list)
    """Literal command lines of ``e COMMAND``."""
    runs_pattern_space: bool = False
    """An ``s///e`` or a bare ``e``: the text being edited is run as a command."""
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)


def _line(script: str, i: int) -> tuple[str, int]:
    end = script.find("\n", i)
    end = len(script) if end == -1 else end
    return script[i:end], end


def _delimited(script: str, i: int, delimiter: str) -> int:
    """Index just past the closing ``delimiter`` of a part that starts at ``i``."""
    n = len(script)
    while i < n:
        c = script[i]
        if c == "\\":
            i += 2
            continue
        if c == delimiter:
            return i + 1
        i += 1
    return n


def _skip_address(script: str, i: int) -> int:
    n = len(script)
    while i < n:
        c = script[i]
        if c.isdigit() or c in "$,~+! \t":
            i += 1
        elif c == "/":
            i = _delimited(script, i + 1, "/")
            while i < n and script[i] in "IM":
                i += 1
        elif c == "\\" and i + 1 < n:
            i = _delimited(script, i + 2, script[i + 1])
        else:
            return i
    return i


def read_sed(script: str) -> SedEffects:
    """The commands, executions and files of one sed script (``-e`` text or operand)."""
    out = SedEffects()
    i, n = 0, len(script)
    while i < n:
        if script[i] in " \t\n;":
            i += 1
            continue
        i = _skip_address(script, i)
        if i >= n:
            break
        command = script[i]
        i += 1
        if command == "#":
            _, i = _line(script, i)
        elif command in _TEXT:
            while True:
                text, i = _line(script, i)
                if not text.endswith("\\") or i >= n:
                    break
                i += 1
        elif command in _LABEL:
            while i < n and script[i] not in ";\n":
                i += 1
        elif command in _FILE_READ or command in _FILE_WRITE:
            name, i = _line(script, i)
            (out.reads if command in _FILE_READ else out.writes).append(name.strip())
        elif command == "e":
            text, i = _line(script, i)
            if text.strip():
                out.commands.append(text.strip())
            else:
                out.runs_pattern_space = True
        elif command in "sy" and i < n:
            delimiter = script[i]
            i = _delimited(script, i + 1, delimiter)
            i = _delimited(script, i, delimiter)
            if command == "s":
                while i < n and script[i] not in ";\n}":
                    if script[i] == "e":
                        out.runs_pattern_space = True
                    if script[i] == "w":
                        name, i = _line(script, i + 1)
                        out.writes.append(name.strip())
                        break
                    i += 1
        elif command in _NO_ARG:
            while i < n and script[i].isdigit():
                i += 1
    return out
