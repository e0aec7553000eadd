"""Build tools, line editors and mail: makefiles on standard input or in ``--eval``,
make's command-line variables, ``cmake -P`` from stdin, ``ed``'s ``!`` commands and mail's
pipe recipients and program settings (see :mod:`corral.shell.analysis._cmdopts`)."""

from __future__ import annotations

import re

from corral.shell.analysis._optwords import (
    nested,
    option_values,
    refuse_option,
    runtime_input,
    stdin_text,
    text_word,
)
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Call
from corral.shell.analysis._walking import Walking

__all__ = ["BUILD_OPTIONS", "makefile_recipes"]

_MAKE_SHELL_VARS = frozenset({"SHELL", "MAKESHELL", ".SHELLFLAGS", "MAKEFLAGS", "MFLAGS"})
_MAKE_TOOL_VARS = frozenset(
    {"CC", "CXX", "CPP", "LD", "AR", "AS", "RANLIB", "STRIP", "NM", "OBJCOPY", "OBJDUMP",
     "INSTALL", "RM", "MAKE", "PYTHON", "PERL", "SED", "AWK", "LEX", "YACC", "FC", "CHECK",
     "MKDIR", "CP", "MV", "LN", "TAR", "SH"}
)  # fmt: skip
_MAKE_META = re.compile(r"[;|&`$<>()\n]")
_MAKE_SHELL_FN = re.compile(r"\$[({]shell\s")


_INLINE_RECIPE = re.compile(r"^[^\t#=]*?[^:=]:{1,2}(?![=])[^;=]*;(.*)$")


def makefile_recipes(text: str) -> str:
    """The shell commands of a makefile: its recipe lines (``\tcmd`` and ``target: ; cmd``)
    and ``$(shell …)`` calls."""
    lines: list[str] = []
    for line in text.split("\n"):
        inline = _INLINE_RECIPE.match(line)
        if line.startswith("\t"):
            lines.append(line.lstrip("\t").lstrip("@-+ "))
        elif inline is not None:
            lines.append(inline.group(1).strip().lstrip("@-+ "))
        elif _MAKE_SHELL_FN.search(line):
            lines.append(_MAKE_SHELL_FN.sub("$(", line.split("=", 1)[-1]))
    return _MAKE_SHELL_FN.sub("$(", "\n".join(lines))


def _make(walker: Walking, call: Call, base: str) -> None:
    argv = call.argv
    for name, word in option_values(argv, "fE", ("file", "makefile", "eval")):
        value = word.value
        if name in ("E", "eval"):
            if value is None:
                refuse_option(word, "the make text given to --eval is not known before make runs")
            nested(walker, call, text_word(makefile_recipes(value or ""), word.text), word.text)
        elif value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            stdin = stdin_text(call)
            if stdin is not None:
                nested(walker, call, text_word(makefile_recipes(stdin), word.text), word.text)
            elif call.stdin.kind != "inherit" or walker.recorder.unconfined:
                refuse_option(word, "make reads its makefile from standard input")
    for word in argv[1:]:
        value = word.value
        if value is None or "=" not in value or value.startswith("-"):
            continue
        name, _, setting = value.partition("=")
        name = name.rstrip(":+?!").strip()
        if name in _MAKE_SHELL_VARS:
            refuse(
                "env_hijack",
                word.text,
                f"Setting {name} on make's command line changes the shell its recipes run "
                "in; run make without it.",
            )
        if name in _MAKE_TOOL_VARS or _MAKE_META.search(setting):
            nested(walker, call, text_word(setting, word.text), word.text)


def _cmake(walker: Walking, call: Call, base: str) -> None:
    for name, word in option_values(call.argv, "P", ()):
        if name == "P" and word.value in ("-", "/dev/stdin", "/dev/fd/0"):
            refuse_option(word, "cmake -P runs a CMake script read from standard input")


def _ed_lines(walker: Walking, call: Call, text: str, origin: str) -> None:
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("!"):
            nested(walker, call, text_word(stripped[1:], origin), origin)
            continue
        match = re.match(r"^[\d,.$;+\-/'a-z\s]*?[ewrWE]\s*!(.*)$", stripped)
        if match:
            nested(walker, call, text_word(match.group(1), origin), origin)


def _ed(walker: Walking, call: Call, base: str) -> None:
    if base == "red":
        return
    for word in call.argv[1:]:
        value = word.value
        if value is not None and value.startswith("!"):
            nested(walker, call, text_word(value[1:], word.text), word.text)
    stdin = stdin_text(call)
    if stdin is not None:
        _ed_lines(walker, call, stdin, call.argv[0].text)
    else:
        runtime_input(walker, call, base, "editing commands")


_MAIL_VARIABLES = re.compile(
    r"^(sendmail|mta|pager|editor|visual|shell|pipe-|on-|folder-hook"
    r"|sendcharsets|smime-|pgp|mailcap|message-inject)",
    re.IGNORECASE,
)


def _mail(walker: Walking, call: Call, base: str) -> None:
    argv = call.argv
    for name, word in option_values(argv, "SE", ("exec", "set")):
        value = word.value
        if name in ("E", "exec"):
            refuse_option(word, f"{base} --exec runs mail commands, which can run shell commands")
        elif value is None or _MAIL_VARIABLES.match(value):
            refuse_option(word, f"{base} -S {word.text} makes mail run a program")
    for word in argv[1:]:
        value = word.value
        if value is not None and value.lstrip().startswith("|"):
            nested(walker, call, text_word(value.lstrip()[1:], word.text), word.text)
        if value == "-~":
            refuse_option(word, f"{base} -~ enables tilde escapes, which run shell commands")
    stdin = stdin_text(call)
    if stdin is not None:
        for line in stdin.split("\n"):
            if line.startswith(("~!", "~|")):
                nested(walker, call, text_word(line[2:], argv[0].text), argv[0].text)


BUILD_OPTIONS = {
    "make": _make,
    "gmake": _make,
    "cmake": _cmake,
    "ed": _ed,
    "red": _ed,
    "mail": _mail,
    "mailx": _mail,
    "Mail": _mail,
    "bsd-mailx": _mail,
    "s-nail": _mail,
    "nail": _mail,
    "heirloom-mailx": _mail,
}
"""Build tools, line editors and mail programs, and their checks."""
