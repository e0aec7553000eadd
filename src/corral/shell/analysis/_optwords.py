"""Shared pieces of the command-string checks: reading option values (glued, separate,
abbreviated, partly unknown) and analysing or refusing the strings they carry."""

from __future__ import annotations

from collections.abc import Sequence

from corral.shell.analysis._escaped import MARK, MARK_NONEMPTY, quote, unescape
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Call
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = [
    "Values",
    "nested",
    "next_word",
    "option_values",
    "refuse_option",
    "runtime_input",
    "stdin_text",
    "text_word",
]

Values = list[tuple[str, ResolvedWord]]


def option_values(
    argv: Sequence[ResolvedWord], short_arg: str, long_arg: Sequence[str], start: int = 1
) -> Values:
    """Every option that takes a value, with that value as a word (``--x=v``, ``-xv``,
    ``-x v``); a long option abbreviated to a prefix counts as every option it prefixes."""
    out: Values = []
    i, n = start, len(argv)
    while i < n:
        value = argv[i].value
        word = argv[i]
        if value == "--":
            break
        if value is None:
            # "--opt=$X" or -o"$X": the option is literal, its value is not.
            head = unescape(word.escaped.split(MARK)[0].split(MARK_NONEMPTY)[0]) or ""
            if head.startswith("-") and head != "-":
                glued = ResolvedWord(word.text, MARK)
                given = head[2:].partition("=")[0] if head.startswith("--") else ""
                names = [name for name in long_arg if given and name.startswith(given)]
                if not head.startswith("--") and len(head) > 1 and head[1] in short_arg:
                    names = [head[1]]
                out.extend((name, glued) for name in names)
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            i += 1
            continue
        if value.startswith("--"):
            given, eq, inline = value[2:].partition("=")
            names = [name for name in long_arg if name.startswith(given)] if given else []
            if names:
                got = ResolvedWord(word.text, quote(inline)) if eq else next_word(argv, i)
                out.extend((name, got) for name in names)
                i += 1 if eq else 2
                continue
            i += 1
            continue
        for j, ch in enumerate(value[1:], start=2):
            if ch in short_arg:
                rest = value[j:]
                got = ResolvedWord(word.text, quote(rest)) if rest else next_word(argv, i)
                out.append((ch, got))
                i += 0 if rest else 1
                break
        i += 1
    return out


def next_word(argv: Sequence[ResolvedWord], i: int) -> ResolvedWord:
    return argv[i + 1] if i + 1 < len(argv) else ResolvedWord("", "")


def refuse_option(word: ResolvedWord | str, what: str) -> None:
    text = word if isinstance(word, str) else word.text
    refuse(
        "exec_option",
        text,
        f"{what}, which the analysis cannot check; do the work with ordinary commands instead.",
    )


def nested(walker: Walking, call: Call, word: ResolvedWord, origin: str) -> None:
    """A command string run by ``sh -c``: analysed one level deeper (refused if not literal)."""
    walker.script(word, call.frame, origin=origin, same_shell=False)


def text_word(text: str, origin: str) -> ResolvedWord:
    return ResolvedWord(origin, quote(text))


def runtime_input(walker: Walking, call: Call, base: str, what: str) -> None:
    """Commands read from standard input the analysis cannot see: refused when unconfined."""
    if walker.recorder.unconfined and call.stdin.kind in ("pipe", "file", "heredoc", "herestring"):
        if call.stdin.kind in ("heredoc", "herestring") and call.stdin.text is not None:
            return
        refuse(
            "exec_option",
            call.argv[0].text,
            f"{base} reads {what} from standard input, which is only known when the command "
            "runs, and without the sandbox that may run anything; pass them literally.",
        )


def stdin_text(call: Call) -> str | None:
    if call.stdin.kind in ("heredoc", "herestring"):
        return call.stdin.text
    return None
