"""Shells and ``source``: a ``-c`` string or a fed here-document is analysed one level
deeper; a script piped in or produced by another command cannot be, and is refused."""

from __future__ import annotations

import re
from typing import Literal

from corral.shell.analysis._escaped import literal_chars, quote
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import BasesAfter, Call, Stdin
from corral.shell.analysis._unreadable import refuse_unreadable
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord
from corral.shell.analysis._written import check_run

__all__ = ["shell", "shell_on_stdin", "source"]


_STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
_DESCRIPTOR = re.compile(r"^(/dev/fd/|/proc/[^/]+/fd/)")


def _script_source(word: ResolvedWord, stdin: Stdin) -> Literal["file", "stdin", "dynamic"]:
    """Where a script operand (``bash FILE``, ``source FILE``) really comes from."""
    value = word.value
    if word.procsub:
        return "dynamic"
    if value in _STDIN_PATHS:
        return "stdin"
    if value is None:
        literal = literal_chars(word.escaped)
        if "/fd/" in literal or "stdin" in literal or _stdin_from_command(stdin):
            return "dynamic"
        return "file"
    if _DESCRIPTOR.match(normalize(value)):
        return "dynamic"
    return "file"


def shell(walker: Walking, call: Call, base: str) -> BasesAfter:
    argv = call.argv
    frame = call.frame
    c_flag = False
    stdin_flag = False
    paths: list[tuple[ResolvedWord, Literal["read", "write"]]] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        value = word.value
        if value is None or word.split:
            refuse(
                "dynamic_script",
                word.text,
                f"An option of {base!r} is only known when the command runs, so the script "
                "it gets cannot be found; write the options literally.",
            )
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            if value in ("--rcfile", "--init-file") and i + 1 < len(argv):
                paths.append((argv[i + 1], "read"))
                i += 2
                continue
            i += 1
            continue
        if value[:1] in "-+" and len(value) > 1:
            takes_next = False
            for ch in value[1:]:
                if ch == "c" and value[0] == "-":
                    c_flag = True
                elif ch == "s":
                    stdin_flag = True
                elif ch in "oO":
                    takes_next = True
            i += 2 if takes_next else 1
            continue
        break
    operands = argv[i:]
    for word, _ in paths:
        if _script_source(word, call.stdin) == "dynamic":
            refuse(
                "dynamic_script",
                word.text,
                f"{base} would run start-up commands from the output of another command, "
                "which cannot be checked; save them to a file, review it, then use the file.",
            )
        if not check_run(walker, call, word, "shell"):
            refuse_unreadable(
                walker,
                call,
                word,
                f"{base} would run start-up commands from the file {word.text!r}",
            )
    if c_flag:
        if operands:
            script = operands[0]
            positionals = tuple(w.escaped for w in operands[1:]) or (quote(base),)
            walker.recorder.record(call, base, mutating=False, skip=set(range(1, len(argv))))
            walker.script(
                script, frame, origin=script.text, positionals=positionals, same_shell=False
            )
        return call.unchanged()
    if operands and not stdin_flag:
        script = operands[0]
        source = _script_source(script, call.stdin)
        if source == "dynamic":
            refuse(
                "dynamic_script",
                script.text,
                f"{base} would run the output of another command as a script, which cannot be "
                "checked; save it to a file, review it, then run the file.",
            )
        if source == "stdin":
            shell_on_stdin(walker, call, base)
            return call.unchanged()
        call.extra_paths = [*call.extra_paths, *paths]
        if not check_run(walker, call, script, "shell"):
            refuse_unreadable(walker, call, script, f"{base} runs the script file {script.text!r}")
        walker.recorder.record(call, base, mutating=False, targets=[(script, "read")], skip={i})
        return call.unchanged()
    shell_on_stdin(walker, call, base)
    return call.unchanged()


def _stdin_from_command(stdin: Stdin) -> bool:
    """Standard input produced by a command: a pipe or ``< <(cmd)``."""
    return stdin.kind == "pipe" or (
        stdin.kind == "file" and stdin.word is not None and stdin.word.procsub
    )


def shell_on_stdin(walker: Walking, call: Call, base: str) -> None:
    stdin = call.stdin
    frame = call.frame
    walker.recorder.record(call, base, mutating=False, skip=set(range(1, len(call.argv))))
    if _stdin_from_command(stdin):
        refuse(
            "shell_stdin",
            call.argv[0].text,
            f"Piping commands into {base} hides them from analysis; run the commands "
            "directly, or save the script to a file, review it and run the file.",
        )
    if stdin.kind == "file" and stdin.word is not None:
        refuse_unreadable(
            walker,
            call,
            stdin.word,
            f"{base} runs the script file {stdin.word.text!r} fed to its standard input",
        )
    if stdin.kind in ("heredoc", "herestring"):
        origin = stdin.word.text if stdin.word is not None else "<<"
        if stdin.text is None:
            refuse(
                "dynamic_script",
                origin,
                f"The here-document or here-string fed to {base} contains expansions the "
                "outer shell substitutes first, so the script is only known at run time; "
                "quote the delimiter (<<'EOF') or the here-string.",
            )
        walker.script(
            ResolvedWord(origin, quote(stdin.text)), frame, origin=origin, same_shell=False
        )


def source(walker: Walking, call: Call, base: str) -> BasesAfter:
    argv = call.argv
    if len(argv) < 2:
        walker.recorder.record(call, base, mutating=False)
        return call.unchanged()
    script = argv[1]
    source = _script_source(script, call.stdin)
    if source == "dynamic":
        refuse(
            "dynamic_script",
            script.text,
            f"{base} would load the output of another command as code, which cannot be "
            "checked; save it to a file, review it, then source the file.",
        )
    if source == "stdin":
        stdin = call.stdin
        if stdin.kind in ("heredoc", "herestring") and stdin.text is not None:
            walker.recorder.record(call, base, mutating=False, skip={1})
            walker.script(
                ResolvedWord(script.text, quote(stdin.text)),
                call.frame,
                origin=script.text,
                same_shell=True,
            )
            return call.unchanged()
        if _stdin_from_command(stdin) or stdin.kind not in ("file", "inherit", "closed"):
            refuse(
                "dynamic_script",
                script.text,
                f"{base} would load code from standard input, which cannot be checked; "
                "write the commands directly.",
            )
    if not check_run(walker, call, script, "shell"):
        refuse_unreadable(walker, call, script, f"{base} loads the file {script.text!r} as code")
    walker.recorder.record(call, base, mutating=False, targets=[(script, "read")], skip={1})
    return call.unchanged()
