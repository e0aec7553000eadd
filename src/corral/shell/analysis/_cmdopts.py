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
from collections.abc import Callable
from typing import Literal

from corral.shell.analysis._buildopts import BUILD_OPTIONS, makefile_recipes
from corral.shell.analysis._escaped import quote
from corral.shell.analysis._optwords import (
    nested,
    next_word,
    option_values,
    refuse_option,
    runtime_input,
    stdin_text,
    text_word,
)
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._sedscript import read_sed
from corral.shell.analysis._state import Call
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = [
    "COMMAND_OPTIONS",
    "check_command_options",
    "makefile_recipes",
    "option_values",
    "tar_old_style",
]

Check = Callable[[Walking, Call, str], None]

# -- tar ---------------------------------------------------------------------------------

_TAR_COMMANDS = ("to-command", "use-compress-program", "info-script", "new-volume-script",
                 "rsh-command", "rmt-command")  # fmt: skip


_TAR_ARG_LETTERS = "fCTXbHKNgVLIF"


def tar_old_style(argv: list[ResolvedWord]) -> list[ResolvedWord]:
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
    argv = tar_old_style(list(call.argv))
    if walker.recorder.unconfined:
        _tar_absolute(argv)
    longs = (*_TAR_COMMANDS, "checkpoint-action", "file", "directory", "files-from",
             "exclude-from", "blocking-factor", "format")  # fmt: skip
    for name, word in option_values(argv, _TAR_ARG_LETTERS, longs):
        if name in ("I", "F") or name in _TAR_COMMANDS:
            nested(walker, call, word, f"tar --{name}")
        elif name == "checkpoint-action":
            value = word.value
            if value is None:
                refuse_option(word, "tar --checkpoint-action is not known before the command runs")
            elif value.startswith("exec="):
                nested(walker, call, text_word(value[5:], word.text), word.text)


def _sort(walker: Walking, call: Call, base: str) -> None:
    """``sort --compress-program=PROG`` runs PROG on its temporary files."""
    longs = ("compress-program", "temporary-directory", "buffer-size", "field-separator",
             "key", "output", "files0-from", "parallel", "batch-size", "random-source")  # fmt: skip
    for name, word in option_values(call.argv, "kotST", longs):
        if name == "compress-program":
            nested(walker, call, word, "sort --compress-program")


def _tar_absolute(argv: list[ResolvedWord]) -> None:
    """``tar -P``/``--absolute-names`` writes members wherever their names point."""
    for word in argv[1:]:
        value = word.value or ""
        if value == "--":
            break
        long = (
            value.startswith("--")
            and len(value) > 4
            and "absolute-names".startswith(value[2:].partition("=")[0])
        )
        if long or (value.startswith("-") and not value.startswith("--") and "P" in value):
            refuse(
                "absolute_paths",
                word.text,
                "tar would keep absolute member names and write wherever the archive says, "
                "paths the gate never sees, and without the sandbox that is the host; extract "
                "without -P/--absolute-names (into a folder with -C).",
            )


# -- curl and wget ---------------------------------------------------------------------------

_URL_SCHEME = re.compile(r"^\s*([^/]*?)://")
_NETWORK_SCHEMES = frozenset({"http", "https", "ftp", "ftps"})


def _fetcher(walker: Walking, call: Call, base: str) -> None:
    """URLs of other schemes (``file://``, ``dict://``, a ``{file,http}`` glob) read local
    files or services. (Config files, ``curl -K`` and ``wget -e``, are unreadable code: see
    :mod:`corral.shell.analysis._unreadable`.)"""
    if not walker.recorder.unconfined:
        return
    for word in call.argv[1:]:
        value = word.value
        if value is None:
            continue
        match = _URL_SCHEME.match(value)
        if match is not None and match.group(1).lower() not in _NETWORK_SCHEMES:
            refuse(
                "local_url",
                word.text,
                f"{base} would fetch {value!r}, whose scheme reads local files or services "
                "the gate cannot check, and without the sandbox that is the host; use an "
                "http(s) URL, or read local files with cat.",
            )
    call.extra_paths = [*call.extra_paths, *_fetcher_files(base, call.argv)]


_CURL_READS = ("data", "data-binary", "data-ascii", "data-urlencode", "json", "header",
               "form", "form-string", "cookie", "proxy-header", "variable")  # fmt: skip
_CURL_WRITES = ("trace", "trace-ascii", "stderr", "libcurl", "etag-save", "hsts", "alt-svc")
_WGET_READS = ("post-file", "body-file", "input-file", "load-cookies")
_WGET_WRITES = ("save-cookies", "rejected-log", "warc-file", "output-document")
_AT_FILE = re.compile(r"^(?:[^=@<]*[=]?)[@<](.+?)(?:;type=.*)?$")


def _fetcher_files(
    base: str, argv: list[ResolvedWord]
) -> list[tuple[ResolvedWord, Literal["read", "write"]]]:
    """Local files curl/wget read or write through options (``-d @file``, ``-F x=@file``,
    ``--post-file``, ``--trace``): without the sandbox the gate must see them."""
    out: list[tuple[ResolvedWord, Literal["read", "write"]]] = []
    if base == "curl":
        values = option_values(argv, "dHFb", (*_CURL_READS, *_CURL_WRITES))
        for name, word in values:
            value = word.value
            if name in _CURL_WRITES:
                out.append((word, "write"))
            elif value is None:
                out.append((word, "read"))
            elif name in ("b", "cookie"):
                if "=" not in value:
                    out.append((word, "read"))
            else:
                found = _AT_FILE.match(value)
                if found is not None and found.group(1) != "-":
                    out.append((text_word(found.group(1), word.text), "read"))
        return out
    for name, word in option_values(argv, "i", (*_WGET_READS, *_WGET_WRITES)):
        out.append((word, "write" if name in _WGET_WRITES else "read"))
    return out


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
                refuse_option(word, "the sed script is not known before the command runs")
            continue
        found = read_sed(word.value)
        for command in found.commands:
            nested(walker, call, text_word(command, word.text), word.text)
        if found.runs_pattern_space and walker.recorder.unconfined:
            refuse_option(word, "sed's e command runs the text being edited as a shell command")
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
                refuse_option(origin, "the SQL calls a function that loads code or reads files")
            if walker.recorder.unconfined and _SQLITE_FILES.search(line):
                refuse_option(origin, "ATTACH/VACUUM INTO opens a file the gate does not see")
            continue
        dot, rest = match.group(1), match.group(2).strip()
        if dot in ("shell", "system"):
            nested(walker, call, text_word(rest, origin), origin)
        elif dot in ("load", "excel"):
            refuse_option(origin, f"sqlite3 .{dot} loads code or starts a program")
        elif rest.lstrip("'\"").startswith("|"):
            target = _first_token(rest)
            nested(
                walker,
                call,
                text_word(target[1:] if target.startswith("|") else target, origin),
                origin,
            )
        elif dot in ("once", "output") and rest.startswith(("-x", "-e", "--x", "--e")):
            refuse_option(origin, f"sqlite3 .{dot} {rest.split()[0]} opens a program")
        elif dot in ("output", "once", "save", "backup", "clone", "open", "import", "read",
                     "restore", "dump") and walker.recorder.unconfined and rest:  # fmt: skip
            refuse_option(origin, f"sqlite3 .{dot} opens a file the gate does not see")


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
                refuse_option(word, "the sqlite3 command is not known before the command runs")
            continue
        if not safe:
            _sqlite_text(walker, call, word.value, word.text)
    stdin = stdin_text(call)
    if stdin is not None and not safe:
        _sqlite_text(walker, call, stdin, argv[0].text)
    elif not safe and not texts:
        runtime_input(walker, call, base, "SQL and dot-commands")


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
        refuse_option(word, f"{base} -{name} runs editor commands, which can run shell commands")
    for word in argv[1:]:
        value = word.value
        if value is not None and value.startswith("+") and not _VIM_SAFE.match(value[1:]):
            refuse_option(
                word, f"{base} {value} runs an editor command, which can run shell commands"
            )
    ex_mode = base in ("ex", "exim") or len(argv) < len(call.argv)
    if ex_mode:
        stdin = stdin_text(call)
        lines = [] if stdin is None else stdin.split("\n")
        if any(not _VIM_SAFE.match(line.strip()) for line in lines):
            refuse_option(argv[0], f"{base} in Ex mode runs editor commands from standard input")
        runtime_input(walker, call, base, "editor commands")


def _emacs(walker: Walking, call: Call, base: str) -> None:
    names = ("eval", "execute", "load", "funcall", "script", "directory", "chdir")
    for name, word in option_values(call.argv, "lfx", names):
        if name in ("directory", "chdir"):
            continue
        if walker.recorder.unconfined:
            refuse_option(word, f"emacs --{name} runs Lisp, which can run any program")


def _man(walker: Walking, call: Call, base: str) -> None:
    for name, word in option_values(call.argv, "PH", ("pager", "html", "browser")):
        if word.value == "" and name in ("H", "html"):
            continue
        nested(walker, call, word, f"man --{name}")


def _zip(walker: Walking, call: Call, base: str) -> None:
    values = option_values(call.argv, "", ("unzip-command",))
    for word in call.argv[1:]:
        if word.value == "-TT":
            index = call.argv.index(word)
            values.append(("TT", next_word(call.argv, index)))
        elif (word.value or "").startswith("-TT") and len(word.value or "") > 3:
            values.append(("TT", ResolvedWord(word.text, quote((word.value or "")[3:]))))
    for name, word in values:
        nested(walker, call, word, f"zip -{name}")


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
            nested(walker, call, text_word(shell.group(2), origin), origin)
        elif _GDB_CODE.match(line) and walker.recorder.unconfined:
            refuse_option(origin, f"the gdb command {line.strip()!r} runs code or a program")


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
            text = ResolvedWord(word.text, quote(inline)) if eq else next_word(argv, index)
            if text.value is None:
                refuse_option(text, "the gdb command is not known before the command runs")
            _gdb_command(walker, call, text.value or "", text.text)
        elif name in ("p", "pid") and walker.recorder.unconfined:
            refuse_option(word, "gdb -p attaches to another process, which may be the platform")
    stdin = stdin_text(call)
    if stdin is not None:
        _gdb_command(walker, call, stdin, argv[0].text)
    else:
        runtime_input(walker, call, base, "debugger commands")


_SOCAT_SHELL = frozenset({"system", "shell"})


def _socat(walker: Walking, call: Call, base: str) -> None:
    for word in call.argv[1:]:
        value = word.value
        if value is None:
            if walker.recorder.unconfined:
                refuse_option(word, "a socat address that is not known before the command runs")
            continue
        for address in value.split("!!"):
            head, colon, rest = address.partition(":")
            kind = head.strip().lower()
            if not colon or (kind != "exec" and kind not in _SOCAT_SHELL):
                continue
            command = _socat_command(rest)
            nested(walker, call, text_word(command, word.text), word.text)


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
            refuse_option(word, "ncat --lua-exec runs Lua code on each connection")
        nested(walker, call, word, f"{base} -{name}")


COMMAND_OPTIONS: dict[str, Check] = {
    "tar": _tar, "gtar": _tar, "bsdtar": _tar,
    "sed": _sed, "gsed": _sed,
    "sort": _sort, "gsort": _sort,
    "curl": _fetcher, "wget": _fetcher, "wget2": _fetcher,
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
    **BUILD_OPTIONS,
}  # fmt: skip
"""Programs with options or inputs that run a command string, and their checks."""


def check_command_options(walker: Walking, call: Call, base: str) -> None:
    """Analyse or refuse the command strings ``base`` would run (see :data:`COMMAND_OPTIONS`)."""
    check = COMMAND_OPTIONS.get(base)
    if check is not None:
        check(walker, call, base)
