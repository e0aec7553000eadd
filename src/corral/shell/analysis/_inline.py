"""Interpreters given code inline (``python3 -c``, ``perl -e``, ``node -e``, an awk program,
a here-document on standard input): the commands that code runs are analysed.

Python is parsed (:mod:`corral.shell.analysis._pycode`); the other languages are scanned
conservatively (:mod:`corral.shell.analysis._codescan`). A literal command found in the code
is analysed like a nested ``bash -c``; code that may run something it does not show, or
code that is itself only known at run time, is refused in unconfined mode and left to the
sandbox otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corral.shell.analysis._cmdopts import option_values
from corral.shell.analysis._codescan import language_of, scan_code
from corral.shell.analysis._escaped import quote
from corral.shell.analysis._pycode import read_python
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Call
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = ["PYTHON", "check_code", "check_inline", "inline_code"]

PYTHON = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")
_PYTHON_ARG = "mWXQ"
_CODE = tuple[ResolvedWord | None, bool]
"""A code word (``None``: no inline code) and whether the program comes from stdin."""


def _python(argv: Sequence[ResolvedWord]) -> _CODE:
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            return None, False
        if value == "-" or not value.startswith("-") or value == "--":
            return None, value == "-"
        if value.startswith("--"):
            i += 1
            continue
        for j, ch in enumerate(value[1:], start=2):
            if ch == "c":
                rest = value[j:]
                if rest:
                    return ResolvedWord(argv[i].text, quote(rest)), False
                return (argv[i + 1] if i + 1 < len(argv) else None), False
            if ch == "m":
                return None, False
            if ch in _PYTHON_ARG:
                i += 0 if value[j:] else 1
                break
        i += 1
    return None, True


def _cluster(
    argv: Sequence[ResolvedWord], letters: str, stops: str, digits: str = ""
) -> list[ResolvedWord]:
    """Code given as ``-e CODE`` inside option clusters (``perl -lne 'code'``); ``stops``
    take the rest of the cluster as their value, ``digits`` an optional number."""
    out: list[ResolvedWord] = []
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None or value == "--" or not value.startswith("-") or value == "-":
            break
        if value.startswith("--"):
            i += 1
            continue
        j = 1
        while j < len(value):
            ch = value[j]
            j += 1
            if ch in letters:
                rest = value[j:]
                if rest:
                    out.append(ResolvedWord(argv[i].text, quote(rest)))
                elif i + 1 < len(argv):
                    out.append(argv[i + 1])
                    i += 1
                break
            if ch in stops:
                break
            if ch in digits:
                hexadecimal = value[j : j + 1] == "x"
                j += 1 if hexadecimal else 0
                allowed = "0123456789abcdefABCDEF" if hexadecimal else "0123456789"
                while j < len(value) and value[j] in allowed:
                    j += 1
        i += 1
    return out


def _awk(argv: Sequence[ResolvedWord]) -> list[ResolvedWord]:
    longs = ("field-separator", "assign", "file", "include", "load", "source", "exec")
    values = option_values(argv, "FvfilEe", longs)
    code = [word for name, word in values if name in ("e", "source")]
    if code or any(name in ("f", "file", "E", "exec") for name, _ in values):
        return code
    consumed = {id(word) for _, word in values}
    for word in argv[1:]:
        if id(word) in consumed or (word.value or "x").startswith("-"):
            continue
        return [word]
    return []


def _long(argv: Sequence[ResolvedWord], shorts: str, longs: Sequence[str]) -> list[ResolvedWord]:
    return [word for _, word in option_values(argv, shorts, longs)]


def inline_code(base: str, argv: Sequence[ResolvedWord]) -> tuple[list[ResolvedWord], bool]:
    """The inline code words of an interpreter call, and whether it reads code from stdin."""
    if PYTHON.match(base):
        word, from_stdin = _python(argv)
        return ([word] if word is not None else []), from_stdin
    language = language_of(base)
    if language is None:
        return [], False
    name = language.name
    if name == "perl":
        code = _cluster(argv, "eE", "MmIixCdDV", digits="l0")
    elif name == "ruby":
        code = _cluster(argv, "e", "rIECxKTWF0")
    elif name == "node":
        code = _long(argv, "ep", ("eval", "print"))
        if base == "deno" and len(argv) > 2 and argv[1].value == "eval":
            code.append(argv[2])
    elif name == "awk":
        return _awk(argv), False
    elif name == "php":
        code = _long(argv, "rBRFE", ("run", "process-begin", "process-code", "process-end"))
    elif name == "tcl":
        code = _long(argv, "c", ("c",)) if base == "expect" else []
    else:
        code = _long(argv, "e", ("e",))
    operands = [w for w in argv[1:] if not (w.value or "-").startswith("-")]
    return code, not code and not operands


def check_code(walker: Walking, call: Call, base: str, code: str, origin: str) -> None:
    """Analyse the commands ``code`` runs; refuse hidden ones when unconfined."""
    language = language_of(base)
    if PYTHON.match(base):
        found = read_python(code)
        scripts, argvs, hidden = found.scripts, found.argvs, found.hidden
    elif language is not None:
        scanned = scan_code(language, code)
        scripts, argvs, hidden = scanned.scripts, [], scanned.hidden
    else:
        return
    for script in scripts:
        walker.script(ResolvedWord(origin, quote(script)), call.frame, origin=origin,
                      same_shell=False)  # fmt: skip
    for argv in argvs:
        walker.run(call.inner([ResolvedWord(arg, quote(arg)) for arg in argv], base))
    if hidden and walker.recorder.unconfined:
        refuse(
            "interpreter_code",
            origin,
            f"The {base} code may run a command it does not show ({hidden[0]}), and without "
            "the sandbox that runs on the host; call programs with literal arguments "
            "(os.system('make test')) or run them from the shell.",
        )


def check_inline(walker: Walking, call: Call, base: str) -> None:
    """Inline code of an interpreter call: given as options, operands or on stdin."""
    words, from_stdin = inline_code(base, call.argv)
    unconfined = walker.recorder.unconfined
    for word in words:
        if word.value is None:
            if unconfined:
                refuse(
                    "interpreter_code",
                    word.text,
                    f"The {base} code {word.text!r} is only known when the command runs, and "
                    "without the sandbox it could do anything; write the code literally.",
                )
            continue
        check_code(walker, call, base, word.value, word.text)
    if not from_stdin:
        return
    stdin = call.stdin
    if stdin.kind == "pipe" and stdin.text is not None:
        # cat <<'EOF' | python3 -: the pipe carries literal text.
        check_code(walker, call, base, stdin.text, call.argv[0].text)
    elif stdin.kind in ("heredoc", "herestring"):
        origin = stdin.word.text if stdin.word is not None else "<<"
        if stdin.text is not None:
            check_code(walker, call, base, stdin.text, origin)
        elif unconfined:
            refuse(
                "interpreter_code",
                origin,
                f"The {base} program on standard input expands variables or commands first, "
                "so it is only known at run time; quote the delimiter (<<'EOF').",
            )
    elif stdin.kind == "pipe" and unconfined:
        refuse(
            "interpreter_code",
            call.argv[0].text,
            f"Piping a program into {base} hides it from analysis, and without the sandbox it "
            "runs on the host; pass the code with -c/-e or save it to a file first.",
        )
