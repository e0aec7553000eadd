"""Code the analysis cannot read, which unconfined mode refuses unless an admin allows it.

Judging arbitrary code statically fails (``operator.attrgetter('sys'+'tem')``, a path
computed at run time, ``require('fs')``), and files on disk (``./run.sh``, ``python3
x.py``, a makefile, ``package.json`` scripts) are never read at all. Under a kernel tier the
kernel contains them; without one the analysis is the boundary, so such code is refused:
inline interpreter code beyond a provably harmless subset (awk that only prints fields),
scripts run by path or through an interpreter or ``source``, build tools that run project
files, and interpreters or shells handed their program at run time (``xargs python3``).

The one way through is the admin's allowlist, the ``unconfined_allowed_commands`` setting:
word lists matched against the parsed argv after wrappers are removed (never the raw
string), exactly, or as a prefix when the list ends in ``"..."``. Each entry is a small
prefix rule, the shape issue 34's per-command rules take.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corral.shell.analysis._cmdopts import tar_old_style
from corral.shell.analysis._codescan import language_of
from corral.shell.analysis._inline import inline_code
from corral.shell.analysis._optwords import option_values
from corral.shell.analysis._refusal import Refused
from corral.shell.analysis._state import Call
from corral.shell.analysis._tables import SYSTEM_PROGRAM_DIRS
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = [
    "ALLOWLIST_SETTING",
    "ANY_FURTHER",
    "SYSTEM_PROGRAM_DIRS",
    "Invocations",
    "allowed_invocation",
    "check_interpreter",
    "harmless_awk",
    "project_code_runner",
    "refuse_unreadable",
    "sql_script_on_stdin",
]

Invocations = tuple[tuple[str, ...], ...]
"""Allowed argv prefixes, each a tuple of words."""

ALLOWLIST_SETTING = "unconfined_allowed_commands"
"""The start-up setting (``CORRAL_UNCONFINED_ALLOWED_COMMANDS``) an admin lists them in."""


_ANY = None
_CONTAINER = frozenset(
    "run exec build buildx compose create start restart cp load import plugin commit "
    "container image service stack swarm context".split()
)
# Build tools and runners that execute project files (makefiles, package.json scripts,
# build.rs, conftest.py, setup.py…): every call (None), or the calls naming one of these words.
_PROJECT_CODE: dict[str, frozenset[str] | None] = {
    "make": _ANY, "gmake": _ANY, "ninja": _ANY, "just": _ANY, "rake": _ANY, "scons": _ANY,
    "cmake": _ANY, "meson": _ANY, "gradle": _ANY, "gradlew": _ANY, "mvn": _ANY, "ant": _ANY,
    "bazel": _ANY, "pytest": _ANY, "py.test": _ANY, "tox": _ANY, "nox": _ANY, "hatch": _ANY,
    "yarn": _ANY, "pnpm": _ANY, "npx": _ANY, "bunx": _ANY, "pnpx": _ANY, "corepack": _ANY,
    "configure": _ANY, "ctest": _ANY, "bazelisk": _ANY, "sbt": _ANY, "lein": _ANY,
    "mix": _ANY, "rebar3": _ANY, "stack": _ANY, "cabal": _ANY, "dune": _ANY, "zig": _ANY,
    "swift": _ANY, "java": _ANY, "javac": _ANY, "kotlinc": _ANY, "scalac": _ANY,
    # test runners, linters and servers that import project code or JS/Python configuration
    "jest": _ANY, "vitest": _ANY, "mocha": _ANY, "ava": _ANY, "karma": _ANY,
    "playwright": _ANY, "cypress": _ANY, "eslint": _ANY, "prettier": _ANY, "stylelint": _ANY,
    "webpack": _ANY, "vite": _ANY, "rollup": _ANY, "esbuild": _ANY, "babel": _ANY,
    "next": _ANY, "nuxt": _ANY, "ts-node": _ANY, "tsx": _ANY, "mypy": _ANY, "pylint": _ANY,
    "sphinx-build": _ANY, "mkdocs": _ANY, "alembic": _ANY, "django-admin": _ANY,
    "uvicorn": _ANY, "gunicorn": _ANY, "flask": _ANY, "celery": _ANY, "streamlit": _ANY,
    "ipython": _ANY, "jupyter": _ANY, "pre-commit": _ANY, "invoke": _ANY, "fab": _ANY,
    "ansible": _ANY, "ansible-playbook": _ANY, "nix": _ANY, "nix-shell": _ANY,
    "direnv": _ANY, "parallel": _ANY, "gdb": _ANY, "lldb": _ANY,
    # small languages that run commands: dc's "!", m4's syscmd, gnuplot's system()
    "dc": _ANY, "m4": _ANY, "gnuplot": _ANY, "expect": _ANY,
    # containers run images and mount the host
    "docker": _CONTAINER, "podman": _CONTAINER, "nerdctl": _CONTAINER, "docker-compose": _ANY,
    # shells and interpreters the tables do not name
    "xonsh": _ANY, "nu": _ANY, "elvish": _ANY, "osh": _ANY, "ysh": _ANY, "oil": _ANY,
    "rc": _ANY, "es": _ANY, "ion": _ANY, "murex": _ANY, "qjs": _ANY, "bb": _ANY,
    "clojure": _ANY, "clj": _ANY, "jjs": _ANY, "rhino": _ANY, "gjs": _ANY, "d8": _ANY,
    "original-awk": _ANY, "goawk": _ANY, "onetrue-awk": _ANY, "bwk-awk": _ANY,
    "cling": _ANY, "crystal": _ANY, "nim": _ANY, "v": _ANY, "dart": _ANY, "ts": _ANY,
    # terminal multiplexers run their command in a server that outlives this one
    "tmux": _ANY, "screen": _ANY, "byobu": _ANY, "daemonize": _ANY,
    "start-stop-daemon": _ANY,
    "npm": frozenset("run run-script rum urn test tst t start stop restart install i in ins "
                     "inst insta instal isnt isnta isntal add ci clean-install install-test "
                     "it cit rebuild rb exec x pack publish explore init create link ln "
                     "install-ci-test update up upgrade".split()),
    "bun": frozenset("run test x install i add create build".split()),
    "cargo": frozenset("build b run r test t bench check c clippy doc d fix install "
                       "package publish rustc rustdoc script".split()),
    "go": frozenset("run test generate tool vet build install get".split()),
    "pip": frozenset("install wheel download".split()),
    "pip3": frozenset("install wheel download".split()),
    "uv": frozenset("run pip sync build tool tools add lock".split()),
    "uvx": _ANY,
    "pipx": frozenset("run install".split()),
    "poetry": frozenset("run install build add update lock".split()),
    "pipenv": frozenset("run install sync".split()),
    "pdm": frozenset("run install build sync add".split()),
    "bundle": frozenset("exec install update".split()),
    "composer": frozenset("run run-script install update require exec".split()),
    "deno": frozenset("run task test bench eval repl compile install".split()),
    "dotnet": frozenset("run test build msbuild pack publish".split()),
}  # fmt: skip


ANY_FURTHER = "..."
"""An entry's last word that lets any further words follow (``["pytest", "..."]``)."""


def allowed_invocation(argv: Sequence[ResolvedWord], allowed: Invocations) -> bool:
    """True when ``argv`` is one of the admin's word lists, word for word, or starts with
    one that ends in ``"..."``.

    Exact by default because further words change what a build tool reads: ``make test -f
    /tmp/x.mk``, ``make test SHELL=./x``, ``pytest -p plugin``. Only literal words match (a
    word known only at run time never does), and the program must be named as the entry
    names it (``python3`` matches ``python3``, not ``./python3`` or ``/tmp/python3``).
    """
    for entry in allowed:
        prefix = entry[:-1] if entry and entry[-1] == ANY_FURTHER else entry
        if not prefix or len(prefix) > len(argv):
            continue
        if len(prefix) == len(entry) and len(argv) != len(prefix):
            continue
        if all(argv[i].value == word for i, word in enumerate(prefix)):
            return True
    return False


def refuse_unreadable(walker: Walking, call: Call, word: ResolvedWord, what: str) -> None:
    """Without the sandbox, refuse ``call`` (``word`` is the culprit) unless allowed."""
    if not walker.recorder.unconfined:
        return
    if allowed_invocation(call.argv, walker.recorder.allowed):
        return
    if walker.recorder.unreadable is not None:
        return
    shown = [w.value if w.value is not None else w.text for w in call.argv[:4]]
    # Kept until the walk ends, so a sharper rule met later (a blocked program, a protected
    # path) names the real problem; the command is refused either way.
    walker.recorder.unreadable = Refused(
        "unreadable_code",
        word.text or "?",
        f"{what}, which the analysis cannot read; without the sandbox the analysis is the "
        "only boundary, so code it cannot read does not run. Run it where a kernel sandbox "
        f"(bubblewrap or Landlock) works, or an admin can allow this invocation with setting "
        f"{ALLOWLIST_SETTING!r} (the exact words, such as {shown!r}, or a prefix ending in "
        f"{ANY_FURTHER!r}).",
    )


_TARS = frozenset({"tar", "gtar", "bsdtar"})
_COMPRESSORS = frozenset(
    "gzip gunzip pigz bzip2 bunzip2 pbzip2 lbzip2 xz unxz pixz zstd unzstd pzstd lz4 lzop "
    "lzip plzip brotli compress uncompress lzma unlzma".split()
)
# Compiler and linker options that load or run other programs.
_COMPILERS = frozenset({"gcc", "g++", "cc", "c++", "clang", "clang++", "ld", "ld.bfd",
                        "ld.gold", "ld.lld", "tcc"})  # fmt: skip
# SQL clients: script files and the meta-commands that run a shell (psql's \!, mysql's system).
_SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlcmd", "duckdb", "clickhouse-client"})
_SQL_CODE = re.compile(r"^(-f|--file|--init-command|-i)|\\!|\\o|\bsystem\b|\.shell|\.system")
# Script and configuration files given by option: sed's (e, w and r commands), curl's
# (URLs, output files), wget's wgetrc commands (output files, proxies).
_SCRIPT_FILE_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sed": ("f", ("file",)), "gsed": ("f", ("file",)), "curl": ("K", ("config",)),
    "wget": ("e", ("execute", "config")), "wget2": ("e", ("execute", "config")),
}  # fmt: skip
_VERSIONED_RUNTIME = re.compile(r"^(node|nodejs|deno|bun|java|php|ruby|perl|lua)[0-9][0-9.]*$")
_LOADING_OPTIONS = ("-fplugin", "-wrapper", "-B", "-specs", "--specs", "-plugin", "--plugin",
                    "-Xclang", "-fpass-plugin", "-load")  # fmt: skip


def sql_script_on_stdin(base: str, call: Call) -> ResolvedWord | None:
    """A SQL client fed a script it may run shell commands from (``psql < x.sql``)."""
    if base not in _SQL_CLIENTS:
        return None
    stdin = call.stdin
    if stdin.kind in ("inherit", "closed"):
        return None
    # An empty text stands for a body the parser could not follow (one opening with "\!").
    if stdin.kind in ("heredoc", "herestring") and stdin.text:
        if not any(_SQL_CODE.search(line.strip()) for line in stdin.text.split("\n")):
            return None
    return stdin.word or call.argv[0]


def _compressor(base: str, argv: Sequence[ResolvedWord]) -> ResolvedWord | None:
    """A compress program that is no known compressor: tar and sort pipe the archive or
    the data through it, so ``tar -I sh`` or ``sort --compress-program=sh`` runs them."""
    if base in _TARS:
        values = option_values(tar_old_style(list(argv)), "I", ("use-compress-program",))
    else:
        values = option_values(argv, "", ("compress-program",))
    for _, word in values:
        program = (word.value or "").split(" ", 1)[0].rsplit("/", 1)[-1]
        if program not in _COMPRESSORS:
            return word
    return None


def project_code_runner(base: str, argv: Sequence[ResolvedWord]) -> ResolvedWord | None:
    """The word that makes ``base`` run code the analysis cannot read (its name, or a
    subcommand or option)."""
    if base in _TARS or base in ("sort", "gsort"):
        return _compressor(base, argv)
    if base in _COMPILERS:
        return next((w for w in argv[1:] if (w.value or "-B").startswith(_LOADING_OPTIONS)), None)
    file_options = _SCRIPT_FILE_OPTIONS.get(base)
    if file_options is not None:
        shorts, longs = file_options
        return next((word for _, word in option_values(argv, shorts, longs)), None)
    if base in ("sqlite3", "sqlite"):
        return next((w for w in argv[1:] if (w.value or "").lstrip("-") == "init"), None)
    if base in _SQL_CLIENTS:
        return next((w for w in argv[1:] if _SQL_CODE.search(w.value or "-f")), None)
    if base == "ldd":
        # ldd may run the program it inspects; installed ones are no project file.
        return next(
            (w for w in argv[1:] if not (w.value or "").startswith(("-", *SYSTEM_PROGRAM_DIRS))),
            None,
        )
    if _VERSIONED_RUNTIME.match(base):
        return argv[0]
    if base not in _PROJECT_CODE:
        return None
    words = _PROJECT_CODE[base]
    if words is None:
        return argv[0]
    for word in argv[1:]:
        if word.value is None or word.value in words:
            return word
    return None


# Awk that only selects and prints. Judged on the raw text, strings included, because
# telling strings, regex literals and division apart is where a scanner gets fooled:
# no getline, system(), pipes, close/fflush, directives (@include, @load), ENVIRON or
# PROCINFO, no ARGV/ARGC (which name the files read), and no ">" once a print appears.
_AWK_BANNED = re.compile(r"\b(getline|system|close|fflush|ENVIRON|PROCINFO|ARGV|ARGC)\b|[|@`]|\\\n")
_AWK_PRINT = re.compile(r"\bprintf?\b")


def harmless_awk(program: str) -> bool:
    """True for an awk program that cannot run commands or touch files beyond its input."""
    if _AWK_BANNED.search(program):
        return False
    first_print = _AWK_PRINT.search(program)
    return first_print is None or ">" not in program[first_print.start() :]


# gawk/mawk options that write profiles or variable dumps, start the debugger, or pass
# implementation options (-W exec, -W dump…).
_AWK_SIDE_OPTION = re.compile(r"^(-[podDW]|--(pr|du|de|p$|d$))")
_VERSION_ONLY = frozenset({"--version", "-V", "-v", "--help", "-h", "-VV", "-version"})
_AWK_FILES = ("f", "file", "E", "exec", "i", "include", "l", "load")


def check_interpreter(walker: Walking, call: Call, base: str) -> None:
    """An interpreter runs code: refused unconfined unless it is harmless awk or a version
    query (``-r ./x.rb``, ``-M``, ``-m``, a script operand, a program on stdin all load code)."""
    if not walker.recorder.unconfined:
        return
    argv = call.argv
    language = language_of(base)
    if language is not None and language.name == "awk":
        for name, word in option_values(
            argv, "FvfilEe", ("file", "include", "load", "exec", "source", "assign")
        ):
            if name in _AWK_FILES:
                refuse_unreadable(walker, call, word, f"{base} would load the file {word.text!r}")
        for word in argv[1:]:
            if _AWK_SIDE_OPTION.match(word.value or ""):
                refuse_unreadable(
                    walker,
                    call,
                    word,
                    f"{base} {word.text} writes or debugs through files the analysis does not see",
                )
        code, _ = inline_code(base, argv)
        for word in code:
            if word.value is None or not harmless_awk(word.value):
                refuse_unreadable(
                    walker,
                    call,
                    word,
                    f"The {base} program {word.text!r} "
                    "reads files, runs commands or writes files itself",
                )
        if not code and call.dynamic_args:
            refuse_unreadable(walker, call, argv[0], f"{base} gets its program at run time")
        return
    for word in argv[1:]:
        if word.value not in _VERSION_ONLY:
            refuse_unreadable(
                walker,
                call,
                word,
                f"{base} {word.text} runs code (inline, from a file or a module)",
            )
    if call.dynamic_args:
        refuse_unreadable(walker, call, argv[0], f"{base} gets its program at run time")
    if len(argv) == 1 and call.stdin.kind not in ("inherit", "closed"):
        refuse_unreadable(walker, call, argv[0], f"{base} runs the program on its standard input")
