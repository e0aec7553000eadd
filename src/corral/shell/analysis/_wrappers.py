"""Wrapper programs: find the command a prefix like ``timeout 5`` or ``env A=1`` runs.

Each wrapper reads its own options with :func:`parse_options`; what is left is the
wrapped command (or, for ``watch``, ``flock -c`` and friends, a string run by ``sh -c``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from corral.shell.analysis._escaped import MARK, quote, unescape
from corral.shell.analysis._options import OptionError, OptSpec, Parsed, parse_options
from corral.shell.analysis._types import Access, Command
from corral.shell.analysis._words import ResolvedWord

__all__ = ["ASSIGNMENT", "RUN_WRAPPERS", "WRAPPERS", "Unwrapped", "unwrap"]

ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")


@dataclass(slots=True)
class Unwrapped:
    """What a wrapper runs."""

    inner: list[list[ResolvedWord]] = field(default_factory=list)
    """Possible wrapped argvs (several when the wrapper's options are ambiguous)."""
    script: ResolvedWord | None = None
    """A string the wrapper hands to ``sh -c``."""
    script_args: list[ResolvedWord] = field(default_factory=list)
    assignments: list[ResolvedWord] = field(default_factory=list)
    chdir: ResolvedWord | None = None
    paths: list[tuple[ResolvedWord, Access]] = field(default_factory=list)
    dynamic_args: bool = False
    reads_stdin_as_shell: bool = False


def _spec(
    short_arg: str = "",
    short_flags: str = "",
    long_arg: str = "",
    long_flags: str = "",
    *,
    short_optional: str = "",
    long_optional: str = "",
    numeric: bool = False,
    strict: bool = True,
) -> OptSpec:
    return OptSpec(
        short_arg=short_arg,
        short_flags=short_flags,
        short_optional=short_optional,
        long_arg=frozenset(long_arg.split()),
        long_flags=frozenset(long_flags.split()) | {"help", "version"},
        long_optional=frozenset(long_optional.split()),
        numeric=numeric,
        strict=strict,
    )


def _argv(words: list[ResolvedWord], parsed: Parsed, positional: int = 0) -> list[ResolvedWord]:
    start = parsed.operands + positional
    return words[start:]


def _simple(spec: OptSpec, positional: int = 0) -> Callable[[list[ResolvedWord]], Unwrapped]:
    """A wrapper ``NAME [options] [positional…] COMMAND…``."""

    def handler(argv: list[ResolvedWord]) -> Unwrapped:
        result = Unwrapped()
        for parsed in parse_options(argv, 1, spec):
            for extra in argv[parsed.operands : parsed.operands + positional]:
                if extra.split:
                    raise OptionError(extra.text, "its value is not known before the command runs")
            inner = _argv(argv, parsed, positional)
            if inner:
                result.inner.append(inner)
        return result

    return handler


def _timeout(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec("ks", "v", "kill-after signal", "preserve-status foreground verbose")
    return _simple(spec, positional=1)(argv)


def _env(argv: list[ResolvedWord], depth: int = 0) -> Unwrapped:
    spec = _spec(
        "uCS",
        "i0v",
        "unset chdir split-string",
        "ignore-environment null debug list-signal-handling",
        long_optional="block-signal default-signal ignore-signal",
    )
    result = Unwrapped()
    (parsed,) = parse_options(argv, 1, spec)
    for word, value in parsed.values("C", "chdir"):
        result.chdir = word
        if word is not None and value is None:
            raise OptionError(word.text, "the directory is not known before the command runs")
    rest = argv[parsed.operands :]
    split = parsed.values("S", "split-string")
    if split:
        if depth > 3:
            raise OptionError(argv[0].text, "env -S is nested too deeply")
        words: list[ResolvedWord] = []
        for word, value in split:
            if value is None or "${" in value:
                text = word.text if word is not None else "-S"
                raise OptionError(text, "the -S string is not known before the command runs")
            try:
                pieces = shlex.split(value, comments=True)
            except ValueError as exc:
                raise OptionError(value, "the -S string does not split cleanly") from exc
            words.extend(ResolvedWord(piece, quote(piece)) for piece in pieces)
        nested = _env([argv[0], *words, *rest], depth + 1)
        nested.chdir = nested.chdir or result.chdir
        return nested
    while rest and rest[0].value == "-":
        rest = rest[1:]
    while rest:
        # env takes any word with "=" as an assignment, whatever the name (BASH_FUNC_x%%).
        word = rest[0]
        head = word.escaped.split("=", 1)[0]
        if "=" in word.escaped and head and not word.split and unescape(head) is not None:
            result.assignments.append(word)
            rest = rest[1:]
            continue
        if word.value is None:
            raise OptionError(word.text, "env cannot tell whether it is an assignment or a command")
        break
    if rest:
        result.inner.append(rest)
    return result


def _command(argv: list[ResolvedWord]) -> Unwrapped:
    (parsed,) = parse_options(argv, 1, _spec("", "pvV"))
    if parsed.has("v", "V"):
        return Unwrapped()
    inner = argv[parsed.operands :]
    return Unwrapped(inner=[inner] if inner else [])


def _builtin(argv: list[ResolvedWord]) -> Unwrapped:
    return Unwrapped(inner=[argv[1:]] if len(argv) > 1 else [])


def _exec(argv: list[ResolvedWord]) -> Unwrapped:
    return _simple(_spec("a", "cl"))(argv)


def _time(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec("fo", "apqv", "format output", "append portability quiet verbose")
    result = Unwrapped()
    for parsed in parse_options(argv, 1, spec):
        for word, _ in parsed.values("o", "output"):
            if word is not None:
                result.paths.append((word, "write"))
        inner = argv[parsed.operands :]
        if inner:
            result.inner.append(inner)
    return result


def _xargs(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec(
        "adEILnPs",
        "0oprtx",
        "arg-file delimiter max-lines max-args max-procs max-chars process-slot-var",
        "null open-tty interactive no-run-if-empty verbose exit show-limits",
        short_optional="eil",
        long_optional="eof replace",
    )
    result = Unwrapped(dynamic_args=True)
    (parsed,) = parse_options(argv, 1, spec)
    for word, _ in parsed.values("a", "arg-file"):
        if word is not None:
            result.paths.append((word, "read"))
    replace: str | None = None
    for name, _, value in parsed.options:
        if name in ("I", "replace"):
            replace = value or "{}"
        elif name == "i":
            replace = value or "{}"
    inner = argv[parsed.operands :] or [ResolvedWord("echo", "echo")]
    if replace:
        inner = [_replace(word, replace) for word in inner]
    else:
        # The words read from stdin are appended: one unknown word stands for them.
        inner = [*inner, ResolvedWord(argv[0].text, MARK, split=True)]
    result.inner.append(inner)
    return result


_GLOB_NAME = re.compile(r"[\w.*?\-]+")
_FIND_OTHER_OUTPUT = frozenset({"-printf", "-fprint", "-fprint0", "-fprintf", "-fls", "-ls",
                                "-exec", "-execdir", "-ok", "-okdir"})  # fmt: skip


def found_paths(commands: Sequence[Command]) -> tuple[str, ...]:
    """What a pipe carries when ``find`` alone feeds it: every path under its starts,
    as escaped ``START/**`` patterns (``START/**/NAME`` for one ``-name``)."""
    if len(commands) != 1 or commands[0].name != "find" or commands[0].wrappers:
        return ()
    argv = commands[0].argv
    values = [word.value for word in argv[1:]]
    if any(v is None or v in _FIND_OTHER_OUTPUT for v in values):
        return ()
    starts = []
    for value in values:
        assert value is not None
        if value in ("-H", "-L", "-P"):
            continue
        if value.startswith("-") or value in ("(", "!", ")", ","):
            break
        starts.append(value)
    names = [values[i + 1] for i, v in enumerate(values[:-1]) if v == "-name"]
    name = names[0] if len(names) == 1 else None
    plain = name is not None and _GLOB_NAME.fullmatch(name) is not None
    tail = f"/**/{name}" if plain else "/**"
    return tuple(quote(start.rstrip("/") or "/") + tail for start in starts or ["."])


def _replace(word: ResolvedWord, placeholder: str) -> ResolvedWord:
    """A word with an ``xargs -I``/``find -exec`` placeholder becomes unknown there."""
    for form in (placeholder, quote(placeholder)):
        if form and form in word.escaped:
            return ResolvedWord(word.text, word.escaped.replace(form, MARK))
    return word


def _flock(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec(
        "Ewc",
        "sxeunoFv",
        "conflict-exit-code wait timeout command",
        "shared exclusive unlock nonblock nb close no-fork verbose",
    )
    result = Unwrapped()
    (parsed,) = parse_options(argv, 1, spec)
    commands = parsed.values("c", "command")
    rest = argv[parsed.operands :]
    if rest:
        result.paths.append((rest[0], "write"))
        rest = rest[1:]
    if rest and rest[0].value in ("-c", "--command") and len(rest) > 1:
        commands.append((rest[1], rest[1].value))
        rest = []
    if commands:
        word = commands[-1][0]
        result.script = word
    elif rest:
        result.inner.append(rest)
    return result


def _watch(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec(
        "nq",
        "tbegcxpwrd",
        "interval equexit shotsfile",
        "no-title beep errexit chgexit color exec precise no-wrap no-rerun",
        long_optional="differences",
    )
    (parsed,) = parse_options(argv, 1, spec)
    rest = argv[parsed.operands :]
    if not rest:
        return Unwrapped()
    if parsed.has("x", "exec"):
        return Unwrapped(inner=[rest])
    return Unwrapped(script=_join(rest))


def _join(words: list[ResolvedWord]) -> ResolvedWord:
    """Words a program joins with spaces before handing them to ``sh -c``."""
    values = [word.value for word in words]
    text = " ".join(word.text for word in words)
    if any(value is None for value in values):
        return ResolvedWord(text, MARK)
    joined = " ".join(value for value in values if value is not None)
    return ResolvedWord(text, quote(joined))


def _parallel(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec(
        "jPSaIdNnLCEX",
        "0gkquvr",
        "jobs sshlogin arg-file replace delimiter max-args max-lines colsep eof timeout "
        "joblog results tmpdir workdir wd delay retries memfree load nice sshloginfile "
        "basefile return transfer-file env tag-string tagstring header",
        "null group keep-order quote ungroup verbose no-run-if-empty bar progress eta tag "
        "line-buffer dry-run halt-on-error pipe pipe-part xargs shuf trim",
        long_optional="halt",
    )
    (parsed,) = parse_options(argv, 1, spec)
    rest = argv[parsed.operands :]
    template: list[ResolvedWord] = []
    for word in rest:
        if word.value is not None and word.value.startswith(":::"):
            break
        template.append(word)
    if not template:
        return Unwrapped()
    script = _join(template)
    value = script.value
    if value is not None:
        # parallel substitutes its inputs for {}, {.}, {1}… or appends them: a variable
        # stands for them, so "bash -c {}" is seen as a script only known at run time.
        marked, count = _PLACEHOLDER.subn('"$PARALLEL_INPUT"', value)
        script = ResolvedWord(script.text, quote(marked if count else value + ' "$PARALLEL_INPUT"'))
    return Unwrapped(script=script, dynamic_args=True)


_PLACEHOLDER = re.compile(r"\{[^{}\s]*\}")


def _busybox(argv: list[ResolvedWord]) -> Unwrapped:
    """Multi-call binaries (busybox, toybox): ``busybox NAME ARGS`` runs NAME."""
    if len(argv) < 2 or (argv[1].value or "").startswith("-"):
        return Unwrapped()
    if argv[1].value is None:
        raise OptionError(argv[1].text, "its value is not known before the command runs")
    return Unwrapped(inner=[argv[1:]])


_LOADER = re.compile(
    r"^(ld-linux[\w.-]*\.so(\.\d+)*|ld\.so(\.\d+)*|ld64\.so(\.\d+)*"
    r"|ld-musl-[\w.-]+\.so(\.\d+)*|ld-\d[\w.]*\.so)$"
)
_LOADER_SPEC = _spec(
    "",
    "",
    "library-path inhibit-rpath audit preload argv0 glibc-hwcaps-prepend glibc-hwcaps-mask",
    "list verify inhibit-cache list-tunables list-diagnostics",
)
_LOADER_VARIABLES = {
    "preload": "LD_PRELOAD",
    "audit": "LD_AUDIT",
    "library-path": "LD_LIBRARY_PATH",
}


def _loader(argv: list[ResolvedWord]) -> Unwrapped:
    """The dynamic loader run as a program (``ld-linux-x86-64.so.2 /usr/bin/sudo``) runs
    the program named after its options; ``--preload``/``--audit`` load code like
    ``LD_PRELOAD`` does."""
    result = Unwrapped()
    (parsed,) = parse_options(argv, 1, _LOADER_SPEC)
    for name, variable in _LOADER_VARIABLES.items():
        for word, value in parsed.values(name):
            if word is not None:
                result.assignments.append(ResolvedWord(word.text, quote(f"{variable}={value}")))
    inner = argv[parsed.operands :]
    if inner:
        result.inner.append(inner)
    return result


def _coreutils(argv: list[ResolvedWord]) -> Unwrapped:
    """The multi-call ``coreutils --coreutils-prog=NAME ARGS`` runs NAME."""
    if len(argv) < 2:
        return Unwrapped()
    value = argv[1].value
    if value is None:
        raise OptionError(argv[1].text, "its value is not known before the command runs")
    if value.startswith("--coreutils-prog="):
        name = value.partition("=")[2]
        return Unwrapped(inner=[[ResolvedWord(argv[1].text, quote(name)), *argv[2:]]])
    return Unwrapped()


def _script(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec(
        "cTBIOmE",
        "aqfe",
        "command log-timing log-io log-in log-out logging-format echo output-limit",
        "append quiet flush return force",
        short_optional="t",
        long_optional="timing",
    )
    (parsed,) = parse_options(argv, 1, spec)
    result = Unwrapped()
    for name in ("T", "B", "I", "O", "log-timing", "log-io", "log-in", "log-out"):
        for word, _ in parsed.values(name):
            if word is not None:
                result.paths.append((word, "write"))
    operands = argv[parsed.operands :]
    if operands:
        result.paths.append((operands[0], "write"))
    commands = parsed.values("c", "command")
    if commands and commands[-1][0] is not None:
        result.script = commands[-1][0]
    else:
        result.reads_stdin_as_shell = True
    return result


def _strace(argv: list[ResolvedWord]) -> Unwrapped:
    spec = _spec("abeEIoOpPsSuUX", "cCdDfFhiknqrtTvVwxyYz", strict=True)
    (parsed,) = parse_options(argv, 1, spec)
    result = Unwrapped()
    for word, _ in parsed.values("o"):
        if word is not None:
            result.paths.append((word, "write"))
    for word, value in parsed.values("E"):
        if word is not None and value is not None and "=" in value:
            result.assignments.append(ResolvedWord(word.text, quote(value)))
    inner = argv[parsed.operands :]
    if inner:
        result.inner.append(inner)
    return result


def _valgrind(argv: list[ResolvedWord]) -> Unwrapped:
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None or argv[i].split:
            raise OptionError(argv[i].text, "its value is not known before the command runs")
        if not value.startswith("-"):
            break
        i += 1
        if value == "--":
            break
    return Unwrapped(inner=[argv[i:]] if i < len(argv) else [])


# "run" front-ends of language tool chains: ``uv run CMD`` runs CMD.
_UV = _spec(
    "pPCfi",
    "qvnU",
    "with with-editable with-requirements python project directory package extra group "
    "only-group no-group index default-index index-url extra-index-url find-links env-file "
    "config-file cache-dir python-preference index-strategy keyring-provider resolution "
    "prerelease exclude-newer link-mode color refresh-package reinstall-package "
    "upgrade-package no-binary-package no-build-package config-setting allow-insecure-host",
    "frozen locked no-sync isolated active no-project no-dev all-extras all-groups no-cache "
    "offline quiet verbose native-tls no-env-file exact script gui-script module compile-bytecode "
    "no-editable upgrade reinstall refresh no-build no-binary only-dev dev no-default-groups "
    "all-packages no-python-downloads managed-python no-managed-python",
    strict=False,
)
_GENERIC_RUN = _spec(
    "pnCe", "qvy", "python project directory env name prefix package", "", strict=False
)


def _run_after(subcommand: str, spec: OptSpec) -> Callable[[list[ResolvedWord]], Unwrapped]:
    """``tool SUBCOMMAND [options] CMD…`` (``poetry run pytest``)."""

    def handler(argv: list[ResolvedWord]) -> Unwrapped:
        if len(argv) < 2 or argv[1].value != subcommand:
            return Unwrapped(inner=[])
        result = Unwrapped()
        for parsed in parse_options(argv, 2, spec):
            for word, _ in parsed.values("directory", "project"):
                result.chdir = word
            inner = argv[parsed.operands :]
            if inner:
                result.inner.append(inner)
        return result

    return handler


_NPX = _spec("pc", "yq", "package call", "yes no quiet", strict=False)


def _npx(argv: list[ResolvedWord], start: int = 1) -> Unwrapped:
    result = Unwrapped()
    for parsed in parse_options(argv, start, _NPX):
        calls = parsed.values("c", "call")
        if calls and calls[-1][0] is not None:
            result.script = calls[-1][0]
            continue
        inner = argv[parsed.operands :]
        if inner:
            result.inner.append(inner)
    return result


def _npm_exec(argv: list[ResolvedWord]) -> Unwrapped:
    if len(argv) < 2 or argv[1].value not in ("exec", "x", "dlx"):
        return Unwrapped(inner=[])
    return _npx(argv, 2)


def _direnv(argv: list[ResolvedWord]) -> Unwrapped:
    if len(argv) < 4 or argv[1].value != "exec":
        return Unwrapped(inner=[])
    return Unwrapped(inner=[argv[3:]], chdir=argv[2])


def _nix_shell(argv: list[ResolvedWord]) -> Unwrapped:
    for index, word in enumerate(argv):
        if word.value in ("--run", "--command") and index + 1 < len(argv):
            return Unwrapped(script=argv[index + 1])
    return Unwrapped()


WRAPPERS: dict[str, Callable[[list[ResolvedWord]], Unwrapped]] = {
    "timeout": _timeout,
    "env": _env,
    "nice": _simple(_spec("n", "", "adjustment", numeric=True)),
    "ionice": _simple(_spec("cnpPu", "t", "class classdata pid pgid uid", "ignore")),
    "nohup": _simple(_spec()),
    "setsid": _simple(_spec("", "cfw", "", "ctty fork wait")),
    "stdbuf": _simple(_spec("ioe", "", "input output error")),
    "chrt": _simple(_spec("TPD", "abdefiormRv", "sched-runtime sched-period sched-deadline",
                          "all-tasks batch deadline fifo idle other rr reset-on-fork max verbose"),
                    positional=1),
    "taskset": _simple(_spec("", "ac", "", "all-tasks cpu-list"), positional=1),
    "command": _command,
    "builtin": _builtin,
    "exec": _exec,
    "time": _time,
    "xargs": _xargs,
    "flock": _flock,
    "watch": _watch,
    "parallel": _parallel,
    "busybox": _busybox,
    "toybox": _busybox,
    "coreutils": _coreutils,
    "coproc": _simple(_spec()),
    "unbuffer": _simple(_spec("", "p")),
    "faketime": _simple(_spec("p", "fm"), positional=1),
    "catchsegv": _simple(_spec()),
    "xvfb-run": _simple(_spec("nsfewp", "al", "server-num server-args auth-file error-file wait",
                              "auto-servernum auto-display listen-tcp")),
    "dbus-run-session": _simple(_spec("", "", "config-file dbus-daemon")),
    "proxychains": _simple(_spec("f", "q")),
    "proxychains4": _simple(_spec("f", "q")),
    "torsocks": _simple(_spec("uPpa", "diq", "user pass port address", "isolate quiet debug")),
    "tsocks": _simple(_spec()),
    "script": _script,
    "strace": _strace,
    "valgrind": _valgrind,
    "npx": _npx,
    "bunx": _npx,
    "direnv": _direnv,
    "nix-shell": _nix_shell,
}  # fmt: skip


def _cmake(argv: list[ResolvedWord]) -> Unwrapped:
    """``cmake -E env|chdir|time … CMD``: the command-mode tools that run a command."""
    if len(argv) < 4 or argv[1].value != "-E":
        return Unwrapped()
    tool = argv[2].value
    if tool == "time":
        return Unwrapped(inner=[argv[3:]])
    if tool == "chdir" and len(argv) > 4:
        return Unwrapped(inner=[argv[4:]], chdir=argv[3])
    if tool == "env":
        rest = argv[3:]
        while rest and (rest[0].value or "").startswith("--unset="):
            rest = rest[1:]
        return _env([argv[0], *rest])
    return Unwrapped()


RUN_WRAPPERS: dict[str, Callable[[list[ResolvedWord]], Unwrapped]] = {
    "cmake": _cmake,
    "uv": _run_after("run", _UV),
    "poetry": _run_after("run", _GENERIC_RUN),
    "pipenv": _run_after("run", _GENERIC_RUN),
    "pdm": _run_after("run", _GENERIC_RUN),
    "hatch": _run_after("run", _GENERIC_RUN),
    "rye": _run_after("run", _GENERIC_RUN),
    "pixi": _run_after("run", _GENERIC_RUN),
    "conda": _run_after("run", _GENERIC_RUN),
    "mamba": _run_after("run", _GENERIC_RUN),
    "micromamba": _run_after("run", _GENERIC_RUN),
    "bundle": _run_after("exec", _GENERIC_RUN),
    "npm": _npm_exec,
    "pnpm": _npm_exec,
    "yarn": _npm_exec,
}


def unwrap(name: str, argv: list[ResolvedWord]) -> Unwrapped | None:
    """The wrapped command of ``argv`` when ``name`` is a wrapper, else ``None``."""
    handler = WRAPPERS.get(name)
    if handler is not None:
        return handler(argv)
    if _LOADER.match(name):
        return _loader(argv)
    handler = RUN_WRAPPERS.get(name)
    if handler is not None:
        result = handler(argv)
        if result.inner or result.script is not None:
            return result
    return None
