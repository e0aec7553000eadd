"""Per-program judgement: shells, ``cd``, ``source``, ``trap``, ``find``, ``git``, ``rm``…

Each handler gets the walker and the resolved :class:`Call`, refuses or records, and
returns the statement's flow.
"""

from __future__ import annotations

from collections.abc import Callable

from corral.shell.analysis import _assign
from corral.shell.analysis._builtins import BUILTINS
from corral.shell.analysis._checks import critical_target
from corral.shell.analysis._cmdopts import check_command_options
from corral.shell.analysis._effects import Effects, effects
from corral.shell.analysis._escaped import MARK, is_glob, unescape
from corral.shell.analysis._git import plan_git
from corral.shell.analysis._host import check_host
from corral.shell.analysis._inline import check_inline
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._shells import shell, shell_on_stdin
from corral.shell.analysis._shells import source as shell_source
from corral.shell.analysis._state import BasesAfter, Call
from corral.shell.analysis._tables import SHELLS, is_interpreter
from corral.shell.analysis._types import Access, Chain
from corral.shell.analysis._unreadable import check_interpreter
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord
from corral.shell.analysis._wrappers import Unwrapped
from corral.shell.analysis._written import check_consumers, check_run

__all__ = ["dispatch", "wrapper"]

Handler = Callable[[Walking, Call, str], BasesAfter]


def _chdir_step(word: ResolvedWord | None) -> Chain:
    if word is None:
        return ()
    value = word.value
    if value is None or is_glob(word.escaped) or value.startswith("~"):
        return (None,)
    return (normalize(value),)


# -- wrappers ------------------------------------------------------------------------------


def wrapper(walker: Walking, call: Call, base: str, unwrapped: Unwrapped) -> BasesAfter:
    """Judge what a wrapper runs; record the wrapped command(s)."""
    frame = call.frame
    for assignment in unwrapped.assignments:
        head, _, tail = assignment.escaped.partition("=")
        name = unescape(head)
        value = ResolvedWord(assignment.text, tail)
        _assign.check(walker, name.split("[")[0] if name else None, value, frame, scope="env")
    chdir = call.chdir + _chdir_step(unwrapped.chdir)
    extra = list(call.extra_paths)
    if unwrapped.chdir is not None:
        walker.recorder.scan_word(unwrapped.chdir, call.bases)
        if walker.recorder.unconfined:
            # env -C DIR: the folder is entered like a cd target, so the gate checks it.
            extra.append((unwrapped.chdir, "read"))
    for word, access in unwrapped.paths:
        walker.recorder.scan_word(word, call.bases)
        walker.recorder.check_device(word)
        extra.append((word, "write" if access == "write" else "read"))
    ran = False
    inners = unwrapped.inner
    if base == "xargs" and call.stdin.carries:
        # find START | xargs CMD: the appended words are paths under START.
        inners = [
            [*argv[:-1], ResolvedWord(argv[-1].text, pattern)] if argv[-1].escaped == MARK else argv
            for argv in inners
            for pattern in call.stdin.carries
        ]
    for argv in inners:
        if unwrapped.chdir is not None:
            for word in argv[1:]:
                walker.recorder.scan_word(word, call.bases, chdir)
        inner = call.inner(argv, base)
        inner.chdir = chdir
        inner.extra_paths = extra
        inner.dynamic_args = call.dynamic_args or unwrapped.dynamic_args
        walker.run(inner)
        ran = True
    if unwrapped.script is not None:
        walker.script(unwrapped.script, frame, origin=unwrapped.script.text, same_shell=False)
        ran = True
    if unwrapped.reads_stdin_as_shell:
        shell_on_stdin(walker, call, base)
    if base == "exec" and not unwrapped.inner:
        for redir in call.redirects:
            if redir.operator == "<" and redir.fd in (None, 0) and redir.word.procsub:
                refuse(
                    "dynamic_script",
                    redir.word.text,
                    "exec would feed the output of another command to the shell's standard "
                    "input, where later commands could run it; read it into a file instead.",
                )
    if not ran:
        call.extra_paths = extra
        walker.recorder.record(call, base, mutating=False, skip=set(range(1, len(call.argv))))
    if base == "exec" and unwrapped.inner:
        return (frozenset(), frozenset())
    return call.unchanged()


# -- programs with structure -----------------------------------------------------------------

_FIND_ONE_ARG = frozenset(
    "-name -iname -path -ipath -regex -iregex -type -xtype -user -group -perm -size -mtime "
    "-atime -ctime -mmin -amin -cmin -maxdepth -mindepth -printf -wholename -iwholename "
    "-lname -ilname -links -inum -uid -gid -used -context -regextype -fstype -D -O "
    "-newermt -newerat -newerct".split()
)
_FIND_READ_ARG = frozenset("-newer -anewer -cnewer -samefile -files0-from".split())
_FIND_WRITE_ARG = frozenset("-fprint -fprint0 -fls".split())
_DELETERS = frozenset({"rm", "unlink", "shred", "rmdir"})


def _find(walker: Walking, call: Call, base: str) -> BasesAfter:
    argv = call.argv
    i = 1
    while i < len(argv) and argv[i].value in ("-H", "-L", "-P"):
        i += 1
    starts: list[ResolvedWord] = []
    while i < len(argv):
        value = argv[i].value
        if value is not None and (value.startswith("-") or value in ("(", "!", ")", ",")):
            break
        starts.append(argv[i])
        i += 1
    if not starts:
        starts = [ResolvedWord(".", ".")]
    delete = False
    targets: list[tuple[ResolvedWord, Access]] = []
    while i < len(argv):
        value = argv[i].value or ""
        if value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            inner: list[ResolvedWord] = []
            while j < len(argv):
                current = argv[j].value
                if current == ";" or (current == "+" and inner and "{}" in (inner[-1].value or "")):
                    break
                inner.append(argv[j])
                j += 1
            if inner:
                words = [_placeholder(w) for w in inner]
                sub = call.inner(words, "find")
                sub.dynamic_args = True
                if value.endswith("dir"):
                    sub.chdir = (*call.chdir, None)
                walker.run(sub)
                if (inner[0].value or "").rsplit("/", 1)[-1] in _DELETERS:
                    delete = True
            i = j + 1
            continue
        if value == "-delete":
            delete = True
        elif value in _FIND_WRITE_ARG or value == "-fprintf":
            if i + 1 < len(argv):
                targets.append((argv[i + 1], "write"))
            i += 3 if value == "-fprintf" else 2
            continue
        elif value in _FIND_READ_ARG:
            if i + 1 < len(argv):
                targets.append((argv[i + 1], "read"))
            i += 2
            continue
        elif value in _FIND_ONE_ARG:
            i += 2
            continue
        i += 1
    if delete:
        for start in starts:
            _destructive(walker, call, start, "find -delete")
    targets.extend((start, "write" if delete else "read") for start in starts)
    for word, _ in targets:
        walker.recorder.check_device(word)
    walker.recorder.record(
        call, base, mutating=delete or any(a == "write" for _, a in targets), targets=targets,
        skip=set(range(1, len(argv))),
    )  # fmt: skip
    return call.unchanged()


def _placeholder(word: ResolvedWord) -> ResolvedWord:
    if "{}" in word.escaped:
        return ResolvedWord(word.text, word.escaped.replace("{}", MARK))
    return word


def _git(walker: Walking, call: Call, base: str) -> BasesAfter:
    plan = plan_git(call.argv)
    for word, reason in plan.hijack:
        refuse(
            "config_hijack",
            word.text,
            f"git would run or load code the command does not show: {reason}. Run git "
            "without that setting.",
        )
    for script in plan.scripts:
        walker.script(script, call.frame, origin=script.text, same_shell=False)
    chdir: Chain = ()
    for word in plan.chdir:
        walker.recorder.scan_word(word, call.bases)
        chdir = (*chdir, *_chdir_step(word))
    for argv in plan.inner:
        sub = call.inner(argv, "git")
        sub.chdir = call.chdir + chdir
        walker.run(sub)
    targets: list[tuple[ResolvedWord, Access]] = [(w, "write") for w in plan.writes]
    if plan.mutating and not plan.writes:
        targets.append((ResolvedWord(".", "."), "write"))
    walker.recorder.record(call, base, mutating=plan.mutating, targets=targets, chdir=chdir)
    return call.unchanged()


def _destructive(walker: Walking, call: Call, word: ResolvedWord, what: str) -> None:
    chains = [loc.cwd + call.chdir for loc in call.bases]
    reason = critical_target(word.escaped, home=walker.home, cwd=walker.cwd, chains=chains)
    if reason:
        refuse(
            "dangerous_rm",
            word.text,
            f"{what} {word.text!r} would delete {reason}; delete specific paths inside your "
            "project instead.",
        )


def _generic(walker: Walking, call: Call, base: str) -> BasesAfter:
    fx: Effects = effects(base, call.argv, interpreter=is_interpreter(base))
    frame = call.frame
    if base == "rm" and any(w.value == "--no-preserve-root" for w in call.argv[1:]):
        refuse(
            "dangerous_rm",
            "--no-preserve-root",
            "rm --no-preserve-root exists only to delete the root directory; it is never allowed.",
        )
    for word in fx.destructive:
        if base in ("chmod", "chown", "chgrp"):
            reason = critical_target(
                word.escaped,
                home=walker.home,
                cwd=walker.cwd,
                chains=[loc.cwd + call.chdir for loc in call.bases],
            )
            recursive_root = fx.recursive or (word.value or "").rstrip("/") == ""
            flag = " -R" if fx.recursive else ""
            if reason and recursive_root and "climbs out" not in reason:
                refuse(
                    "dangerous_permissions",
                    word.text,
                    f"{base}{flag} on {word.text!r} would change {reason}; change "
                    "permissions of specific project files instead.",
                )
        else:
            _destructive(walker, call, word, base)
    for word, _ in fx.targets:
        walker.recorder.check_device(word)
    for script in fx.scripts:
        walker.script(script, frame, origin=script.text, same_shell=False)
    check_inline(walker, call, base)
    if is_interpreter(base):
        scripts = [word for word, access in fx.targets if access == "read"]
        if scripts:
            check_run(walker, call, scripts[0], base)
    if is_interpreter(base) and call.stdin.kind in ("heredoc", "herestring"):
        if call.stdin.text is not None:
            walker.recorder.scan_text(call.stdin.text, call.argv[0].text, call.bases)
    if is_interpreter(base):
        check_interpreter(walker, call, base)
    chdir = _chdir_step(fx.chdir) if fx.chdir is not None else ()
    walker.recorder.record(
        call,
        base,
        mutating=fx.mutating,
        targets=fx.targets,
        skip=fx.skip,
        text_only=fx.text_only,
        chdir=chdir,
    )
    return call.unchanged()


def _evaluated(walker: Walking, call: Call, base: str) -> BasesAfter:
    """``let``, ``test``/``[`` (``-v``, ``-eq``) and ``wait -p`` treat words as variable
    names or arithmetic, whose subscripts bash evaluates: ``let 'a[$(cmd)]'`` runs ``cmd``."""
    for word in call.argv[1:]:
        _assign.embedded(walker, word, call.frame)
    if base in ("test", "["):
        return _generic(walker, call, base)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


_HANDLERS: dict[str, Handler] = {
    **BUILTINS,
    "let": _evaluated,
    "test": _evaluated,
    "[": _evaluated,
    "wait": _evaluated,
    "source": shell_source,
    ".": shell_source,
    "find": _find,
    "git": _git,
}


def dispatch(walker: Walking, call: Call, base: str) -> BasesAfter:
    """Judge and record a command that is not a wrapper."""
    check_host(base, call.argv)
    check_command_options(walker, call, base)
    check_consumers(walker, call, base)
    if base in SHELLS:
        return shell(walker, call, base)
    handler = _HANDLERS.get(base, _generic)
    return handler(walker, call, base)
