"""Options and inputs that make a program run a command string.

``tar --to-command``, ``sed 's/x/y/e'``, ``sqlite3 db '.shell …'``, ``zip -TT``, ``vim -c
'!…'``, ``man -P``, ``gdb -ex 'shell …'``, ``socat SYSTEM:…``, ``nc -e``, a makefile on
standard input, ``cmake -E env``, ``ed`` with ``!`` lines, ``mail '|cmd'``… A literal
command string is analysed as the nested command it is; one that is not literal, or a
language the analysis cannot follow, is refused (``exec_option``). Where the string is
data the command reads at run time (a pipe into ``ed``), only unconfined mode refuses:
the sandbox contains it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from corral.shell.analysis._escaped import MARK, MARK_NONEMPTY, quote, unescape
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._sedscript import read_sed
from corral.shell.analysis._state import Call
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = ["COMMAND_OPTIONS", "check_command_options", "option_values"]

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
                got = ResolvedWord(word.text, quote(inline)) if eq else _next(argv, i)
                out.extend((name, got) for name in names)
                i += 1 if eq else 2
                continue
            i += 1
            continue
        for j, ch in enumerate(value[1:], start=2):
            if ch in short_arg:
                rest = value[j:]
                got = ResolvedWord(word.text, quote(rest)) if rest else _next(argv, i)
                out.append((ch, got))
                i += 0 if rest else 1
                break
        i += 1
    return out


def _next(argv: Sequence[ResolvedWord], i: int) -> ResolvedWord:
    return argv[i + 1] if i + 1 < len(argv) else ResolvedWord("", "")


def _refuse(word: ResolvedWord | str, what: str) -> None:
    text = word if isinstance(word, str) else word.text
    refuse(
        "exec_option",
        text,
        f"{what}, which the analysis cannot check; do the work with ordinary commands instead.",
    )


def _nested(walker: Walking, call: Call, word: ResolvedWord, origin: str) -> None:
    """A command string run by ``sh -c``: analysed one level deeper (refused if not literal)."""
    walker.script(word, call.frame, origin=origin, same_shell=False)


def _text(text: str, origin: str) -> ResolvedWord:
    return ResolvedWord(origin, quote(text))


def _runtime_input(walker: Walking, call: Call, base: str, what: str) -> None:
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


def _stdin_text(call: Call) -> str | None:
    if call.stdin.kind in ("heredoc", "herestring"):
        return call.stdin.text
    return None


# -- tar ---------------------------------------------------------------------------------

_TAR_COMMANDS = ("to-command", "use-compress-program", "info-script", "new-volume-script",
                 "rsh-command", "rmt-command")  # fmt: skip


_TAR_ARG_LETTERS = "fCTXbHKNgVLIF"


def _tar_old_style(argv: list[ResolvedWord]) -> list[ResolvedWord]:
    """``tar cIf PROG x.tar``: each letter that takes a value takes the next word in turn."""
    if len(argv) < 2 or not argv[1].value or argv[1].value.startswith("-"):
        return argv
    out = [argv[0]]
    rest = argv[2:]
    for letter in argv[1].value:
        out.append(ResolvedWord(argv[1].text, "-" + letter))
        if letter in _TAR_ARG_LETTERS and rest:
            out.append(rest.pop(0))
    return out + rest


def _tar(walker: Walking, call: Call, base: str) -> None:
    argv = _tar_old_style(list(call.argv))
    longs = (*_TAR_COMMANDS, "checkpoint-action", "file", "directory", "files-from",
             "exclude-from", "blocking-factor", "format")  # fmt: skip
    for name, word in option_values(argv, _TAR_ARG_LETTERS, longs):
        if name in ("I", "F") or name in _TAR_COMMANDS:
            _nested(walker, call, word, f"tar --{name}")
        elif name == "checkpoint-action":
            value = word.value
            if value is None:
                _refuse(word, "tar --checkpoint-action is not known before the command runs")
            elif value.startswith("exec="):
                _nested(walker, call, _text(value[5:], word.text), word.text)


# -- sed ---------------------------------------------------------------------------------


def _sed(walker: Walking, call: Call, base: str) -> None:
    argv = call.argv
    if any(w.value == "--sandbox" for w in argv[1:]):
        return
    values = option_values(argv, "ef", ("expression", "file", "line-length"))
    scripts = [word for name, word in values if name in ("e", "expression")]
    if not scripts and not any(name in ("f", "file") for name, _ in values):
        consumed = {id(word) for _, word in values}
        for word in argv[1:]:
            if id(word) not in consumed and not (word.value or "x").startswith("-"):
                scripts.append(word)
                break
    for word in scripts:
        if word.value is None:
            if walker.recorder.unconfined:
                _refuse(word, "the sed script is not known before the command runs")
            continue
        found = read_sed(word.value)
        for command in found.commands:
            _nested(walker, call, _text(command, word.text), word.text)
        if found.runs_pattern_space and walker.recorder.unconfined:
            _refuse(word, "sed's e command runs the text being edited as a shell command")
        for path in found.writes:
            call.extra_paths.append((ResolvedWord(word.text, quote(path)), "write"))
        for path in found.reads:
            call.extra_paths.append((ResolvedWord(word.text, quote(path)), "read"))


# -- sqlite3 -----------------------------------------------------------------------------

_SQLITE_DOT = re.compile(r"^\s*\.(\w+)\s*(.*)$")
_SQLITE_FUNCTIONS = re.compile(r"\b(load_extension|edit|writefile|readfile|fts3_tokenizer)\s*\(",
                               re.IGNORECASE)  # fmt: skip
_SQLITE_FILES = re.compile(r"\b(attach|vacuum\s+into)\b", re.IGNORECASE)


def _first_token(text: str) -> str:
    try:
        tokens = shlex.split(text)
    except ValueError:
        return text
    return tokens[0] if tokens else text


def _single_dash_long(value: str | None) -> bool:
    return value is not None and len(value) > 2 and value[0] == "-" and value[1] != "-"


def _sqlite_text(walker: Walking, call: Call, text: str, origin: str) -> None:
    for line in text.splitlines() or [text]:
        match = _SQLITE_DOT.match(line)
        if match is None:
            if _SQLITE_FUNCTIONS.search(line):
                _refuse(origin, "the SQL calls a function that loads code or reads files")
            if walker.recorder.unconfined and _SQLITE_FILES.search(line):
                _refuse(origin, "ATTACH/VACUUM INTO opens a file the gate does not see")
            continue
        dot, rest = match.group(1), match.group(2).strip()
        if dot in ("shell", "system"):
            _nested(walker, call, _text(rest, origin), origin)
        elif dot in ("load", "excel"):
            _refuse(origin, f"sqlite3 .{dot} loads code or starts a program")
        elif rest.lstrip("'\"").startswith("|"):
            target = _first_token(rest)
            _nested(
                walker,
                call,
                _text(target[1:] if target.startswith("|") else target, origin),
                origin,
            )
        elif dot in ("once", "output") and rest.startswith(("-x", "-e", "--x", "--e")):
            _refuse(origin, f"sqlite3 .{dot} {rest.split()[0]} opens a program")
        elif dot in ("output", "once", "save", "backup", "clone", "open", "import", "read",
                     "restore", "dump") and walker.recorder.unconfined and rest:  # fmt: skip
            _refuse(origin, f"sqlite3 .{dot} opens a file the gate does not see")


def _sqlite(walker: Walking, call: Call, base: str) -> None:
    # sqlite3 spells its long options with one dash (-cmd, -init); read them as --cmd.
    argv = [
        ResolvedWord(w.text, "-" + w.escaped) if _single_dash_long(w.value) else w
        for w in call.argv
    ]
    safe = any(w.value in ("-safe", "--safe") for w in argv[1:])
    values = option_values(argv, "", ("cmd", "init", "separator", "newline", "nullvalue"))
    texts = [word for name, word in values if name == "cmd"]
    consumed = {id(word) for _, word in values}
    operands = [w for w in argv[1:] if id(w) not in consumed and not (w.value or "x")[:1] == "-"]
    texts.extend(operands[1:])
    for word in texts:
        if word.value is None:
            if not safe and walker.recorder.unconfined:
                _refuse(word, "the sqlite3 command is not known before the command runs")
            continue
        if not safe:
            _sqlite_text(walker, call, word.value, word.text)
    stdin = _stdin_text(call)
    if stdin is not None and not safe:
        _sqlite_text(walker, call, stdin, argv[0].text)
    elif not safe and not texts:
        _runtime_input(walker, call, base, "SQL and dot-commands")


# -- editors and viewers -----------------------------------------------------------------

_VIM_SAFE = re.compile(r"^(\d*|/[^|!]*|\$|(set?|setl|setlocal|syn|syntax|filetype|ft|wq?|x|q!?"
                       r"|qa!?|wqa|noh)(\s[^|!`]*)?)$")  # fmt: skip


def _vim(walker: Walking, call: Call, base: str) -> None:
    argv = [w for w in call.argv if w.value not in ("-es", "-Es", "-e", "-E")]
    for name, word in option_values(argv, "cSsuUiTWw", ("cmd",)):
        value = word.value
        if name in ("c", "cmd") and value is not None and _VIM_SAFE.match(value.strip()):
            continue
        if name in ("u", "U", "i") and value in ("NONE", "NORC"):
            continue
        if name in ("T",):
            continue
        if name in ("W", "w"):
            call.extra_paths.append((word, "write"))
            continue
        _refuse(word, f"{base} -{name} runs editor commands, which can run shell commands")
    for word in argv[1:]:
        value = word.value
        if value is not None and value.startswith("+") and not _VIM_SAFE.match(value[1:]):
            _refuse(word, f"{base} {value} runs an editor command, which can run shell commands")
    ex_mode = base in ("ex", "exim") or len(argv) < len(call.argv)
    if ex_mode:
        stdin = _stdin_text(call)
        lines = [] if stdin is None else stdin.split("\n")
        if any(not _VIM_SAFE.match(line.strip()) for line in lines):
            _refuse(argv[0], f"{base} in Ex mode runs editor commands from standard input")
        _runtime_input(walker, call, base, "editor commands")


def _emacs(walker: Walking, call: Call, base: str) -> None:
    names = ("eval", "execute", "load", "funcall", "script", "directory", "chdir")
    for name, word in option_values(call.argv, "lfx", names):
        if name in ("directory", "chdir"):
            continue
        if walker.recorder.unconfined:
            _refuse(word, f"emacs --{name} runs Lisp, which can run any program")


def _man(walker: Walking, call: Call, base: str) -> None:
    for name, word in option_values(call.argv, "PH", ("pager", "html", "browser")):
        if word.value == "" and name in ("H", "html"):
            continue
        _nested(walker, call, word, f"man --{name}")


def _zip(walker: Walking, call: Call, base: str) -> None:
    values = option_values(call.argv, "", ("unzip-command",))
    for word in call.argv[1:]:
        if word.value == "-TT":
            index = call.argv.index(word)
            values.append(("TT", _next(call.argv, index)))
        elif (word.value or "").startswith("-TT") and len(word.value or "") > 3:
            values.append(("TT", ResolvedWord(word.text, quote((word.value or "")[3:]))))
    for name, word in values:
        _nested(walker, call, word, f"zip -{name}")


# -- debuggers, expect, network relays -----------------------------------------------------

_GDB_SHELL = re.compile(r"^\s*(shell\b|!)(.*)$", re.DOTALL)
_GDB_CODE = re.compile(
    r"^\s*(python|py|pi|python-interactive|guile|gu|pipe|\||make|source|define|eval|attach"
    r"|compile|expression|call|print|p|jit-reader-load|add-auto-load|set\s+(auto-load|debug)"
    r"|init-if-undefined|run|r|start|starti)\b"
)


def _gdb_command(walker: Walking, call: Call, text: str, origin: str) -> None:
    for line in text.splitlines() or [text]:
        shell = _GDB_SHELL.match(line)
        if shell is not None:
            _nested(walker, call, _text(shell.group(2), origin), origin)
        elif _GDB_CODE.match(line) and walker.recorder.unconfined:
            _refuse(origin, f"the gdb command {line.strip()!r} runs code or a program")


def _gdb(walker: Walking, call: Call, base: str) -> None:
    argv = call.argv
    for index, word in enumerate(argv[1:], start=1):
        name, eq, inline = (word.value or "").lstrip("-").partition("=")
        if not (word.value or "").startswith("-"):
            continue
        if name == "args" and index + 1 < len(argv):
            walker.run(call.inner(argv[index + 1 :], base))
            break
        if name in ("ex", "eval-command", "iex", "init-eval-command"):
            text = ResolvedWord(word.text, quote(inline)) if eq else _next(argv, index)
            if text.value is None:
                _refuse(text, "the gdb command is not known before the command runs")
            _gdb_command(walker, call, text.value or "", text.text)
        elif name in ("p", "pid") and walker.recorder.unconfined:
            _refuse(word, "gdb -p attaches to another process, which may be the platform")
    stdin = _stdin_text(call)
    if stdin is not None:
        _gdb_command(walker, call, stdin, argv[0].text)
    else:
        _runtime_input(walker, call, base, "debugger commands")


_SOCAT_SHELL = frozenset({"system", "shell"})


def _socat(walker: Walking, call: Call, base: str) -> None:
    for word in call.argv[1:]:
        value = word.value
        if value is None:
            if walker.recorder.unconfined:
                _refuse(word, "a socat address that is not known before the command runs")
            continue
        for address in value.split("!!"):
            head, colon, rest = address.partition(":")
            kind = head.strip().lower()
            if not colon or kind not in ("exec", *_SOCAT_SHELL):
                continue
            command = _socat_command(rest)
            _nested(walker, call, _text(command, word.text), word.text)


def _socat_command(rest: str) -> str:
    """The command part of ``EXEC:cmd,opt…`` (a quoted comma belongs to the command)."""
    out: list[str] = []
    quote_char = ""
    for ch in rest:
        if quote_char:
            if ch == quote_char:
                quote_char = ""
            out.append(ch)
        elif ch in "'\"":
            quote_char = ch
            out.append(ch)
        elif ch == ",":
            break
        else:
            out.append(ch)
    return "".join(out)


def _netcat(walker: Walking, call: Call, base: str) -> None:
    longs = ("exec", "sh-exec", "lua-exec")
    for name, word in option_values(call.argv, "ec", longs):
        if name == "lua-exec":
            _refuse(word, "ncat --lua-exec runs Lua code on each connection")
        _nested(walker, call, word, f"{base} -{name}")


# -- build tools, line editors, mail -------------------------------------------------------

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
                _refuse(word, "the make text given to --eval is not known before make runs")
            _nested(walker, call, _text(makefile_recipes(value or ""), word.text), word.text)
        elif value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            stdin = _stdin_text(call)
            if stdin is not None:
                _nested(walker, call, _text(makefile_recipes(stdin), word.text), word.text)
            elif call.stdin.kind != "inherit" or walker.recorder.unconfined:
                _refuse(word, "make reads its makefile from standard input")
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
            _nested(walker, call, _text(setting, word.text), word.text)


def _cmake(walker: Walking, call: Call, base: str) -> None:
    for name, word in option_values(call.argv, "P", ()):
        if name == "P" and word.value in ("-", "/dev/stdin", "/dev/fd/0"):
            _refuse(word, "cmake -P runs a CMake script read from standard input")


def _ed_lines(walker: Walking, call: Call, text: str, origin: str) -> None:
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("!"):
            _nested(walker, call, _text(stripped[1:], origin), origin)
            continue
        match = re.match(r"^[\d,.$;+\-/'a-z\s]*?[ewrWE]\s*!(.*)$", stripped)
        if match:
            _nested(walker, call, _text(match.group(1), origin), origin)


def _ed(walker: Walking, call: Call, base: str) -> None:
    if base == "red":
        return
    for word in call.argv[1:]:
        value = word.value
        if value is not None and value.startswith("!"):
            _nested(walker, call, _text(value[1:], word.text), word.text)
    stdin = _stdin_text(call)
    if stdin is not None:
        _ed_lines(walker, call, stdin, call.argv[0].text)
    else:
        _runtime_input(walker, call, base, "editing commands")


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
            _refuse(word, f"{base} --exec runs mail commands, which can run shell commands")
        elif value is None or _MAIL_VARIABLES.match(value):
            _refuse(word, f"{base} -S {word.text} makes mail run a program")
    for word in argv[1:]:
        value = word.value
        if value is not None and value.lstrip().startswith("|"):
            _nested(walker, call, _text(value.lstrip()[1:], word.text), word.text)
        if value == "-~":
            _refuse(word, f"{base} -~ enables tilde escapes, which run shell commands")
    stdin = _stdin_text(call)
    if stdin is not None:
        for line in stdin.split("\n"):
            if line.startswith(("~!", "~|")):
                _nested(walker, call, _text(line[2:], argv[0].text), argv[0].text)


Check = Callable[[Walking, Call, str], None]

COMMAND_OPTIONS: dict[str, Check] = {
    "tar": _tar, "gtar": _tar, "bsdtar": _tar,
    "sed": _sed, "gsed": _sed,
    "sqlite3": _sqlite, "sqlite": _sqlite,
    "vim": _vim, "vi": _vim, "nvim": _vim, "view": _vim, "vimdiff": _vim, "ex": _vim,
    "rvim": _vim, "gvim": _vim, "evim": _vim, "exim": _vim, "gview": _vim,
    "emacs": _emacs,
    "man": _man,
    "zip": _zip,
    "gdb": _gdb,
    "socat": _socat,
    "nc": _netcat, "ncat": _netcat, "netcat": _netcat, "nc.traditional": _netcat,
    "nc.openbsd": _netcat,
    "make": _make, "gmake": _make,
    "cmake": _cmake,
    "ed": _ed, "red": _ed,
    "mail": _mail, "mailx": _mail, "Mail": _mail, "bsd-mailx": _mail, "s-nail": _mail,
    "nail": _mail, "heirloom-mailx": _mail,
}  # fmt: skip
"""Programs with options or inputs that run a command string, and their checks."""


def check_command_options(walker: Walking, call: Call, base: str) -> None:
    """Analyse or refuse the command strings ``base`` would run (see :data:`COMMAND_OPTIONS`)."""
    check = COMMAND_OPTIONS.get(base)
    if check is not None:
        check(walker, call, base)
