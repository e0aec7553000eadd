"""Builtins with effects the analysis must follow: ``cd``/``pushd``/``popd`` move the
base of later paths; ``trap``, ``alias`` and ``mapfile -C`` hold code; ``read``,
``printf -v`` and ``getopts`` set variables; ``kill -1`` and power verbs are refused."""

from __future__ import annotations

from collections.abc import Callable

from corral.shell.analysis import _assign
from corral.shell.analysis._checks import power_verb
from corral.shell.analysis._escaped import is_glob, quote
from corral.shell.analysis._host import check_kill
from corral.shell.analysis._paths import cancels_a_name, normalize
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import BasesAfter, Call, Loc, merge
from corral.shell.analysis._types import CdMove, Chain
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord, public_word

__all__ = ["BUILTINS"]


def _cd(walker: Walking, call: Call, base: str) -> BasesAfter:
    operands = [w for w in call.argv[1:] if not (w.value or "x").startswith("-") or w.value == "-"]
    target = operands[0] if operands else None
    scoped = call.ctx.subshell
    moved: set[Loc] = set()
    if base == "popd":
        for loc in call.bases:
            # popd on an empty stack fails and the shell stays put.
            moved.add(Loc(loc.stack[0], loc.stack[1:], loc.cwd) if loc.stack else loc)
        walker.recorder.cd_move(CdMove(kind="popd", target=None, scoped=scoped), None)
        return (merge(frozenset(moved)), call.bases)
    ref = None
    if target is not None and target.value != "-":
        walker.recorder.scan_word(target, call.bases)
        ref = walker.recorder.path_ref(target, "exec", "cd", base, call.bases, ())
    step: str | None
    if target is None:
        step = walker.home
    elif target.value == "-":
        step = "-"
    elif target.value is None or is_glob(target.escaped) or target.value.startswith(("~", "+")):
        step = None
    elif walker.recorder.unconfined and cancels_a_name(_below_home(target.value, walker.home)):
        # cd link/..: where it lands depends on the disk; later relative paths are unknown.
        step = None
    else:
        step = normalize(target.value)
    for loc in call.bases:
        if step == "-":
            new_cwd: Chain = loc.old if loc.old is not None else (None,)
        else:
            new_cwd = _push(loc.cwd, step)
        stack = (loc.cwd, *loc.stack) if base == "pushd" else loc.stack
        moved.add(Loc(new_cwd, stack, loc.cwd))
    walker.recorder.cd_move(
        CdMove(
            kind="pushd" if base == "pushd" else "cd",
            target=None if target is None else public_word(target),
            scoped=scoped,
        ),
        ref,
    )
    return (merge(frozenset(moved)), call.bases)


def _below_home(path: str, home: str | None) -> str:
    """``path`` with the home folder taken off: a fresh folder the command gets, no link."""
    if home and path.startswith(home + "/"):
        return path[len(home) + 1 :]
    return path


def _push(chain: Chain, step: str | None) -> Chain:
    if step is None:
        return (None,)
    if step.startswith("/"):
        return (step,)
    if len(chain) >= 16:
        return (None,)
    return (*chain, step)


def _trap(walker: Walking, call: Call, base: str) -> BasesAfter:
    args = call.argv[1:]
    walker.recorder.record(call, base, mutating=False, text_only=True)
    if args and args[0].value == "--":
        args = args[1:]
    elif args and (args[0].value or "").startswith("-") and args[0].value != "-":
        return call.unchanged()
    if len(args) < 2 or args[0].value in ("-", ""):
        return call.unchanged()
    walker.script(args[0], call.frame, origin=args[0].text, same_shell=True)
    return call.unchanged()


def _alias(walker: Walking, call: Call, base: str) -> BasesAfter:
    walker.recorder.record(call, base, mutating=False, text_only=True)
    for word in call.argv[1:]:
        value = word.value
        if value is None:
            refuse("dynamic_script", word.text, "An alias whose text is not known; write it out.")
        _, eq, body = value.partition("=")
        if eq:
            walker.script(
                ResolvedWord(word.text, quote(body)), call.frame, origin=word.text, same_shell=True
            )
    return call.unchanged()


def _enable(walker: Walking, call: Call, base: str) -> BasesAfter:
    for word in call.argv[1:]:
        value = word.value or ""
        if value.startswith("-") and ("f" in value or "d" in value):
            refuse(
                "shell_hijack",
                word.text,
                "enable -f loads a shared library into the shell as a builtin; it is not allowed.",
            )
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _hash(walker: Walking, call: Call, base: str) -> BasesAfter:
    for word in call.argv[1:]:
        if (word.value or "").startswith("-") and "p" in (word.value or ""):
            refuse(
                "shell_hijack",
                word.text,
                "hash -p makes a command name run a different program; call the program by "
                "its path instead.",
            )
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _names_from(
    walker: Walking, call: Call, short_arg: str, name_options: str, operand_names: bool
) -> None:
    argv = call.argv
    i = 1
    names: list[ResolvedWord] = []
    while i < len(argv):
        word = argv[i]
        value = word.value
        if value is None:
            names.append(word)
            i += 1
            continue
        if value == "--":
            names.extend(argv[i + 1 :])
            break
        if value.startswith("-") and len(value) > 1:
            j = 1
            while j < len(value):
                ch = value[j]
                if ch in short_arg:
                    arg = value[j + 1 :]
                    target = (
                        ResolvedWord(word.text, quote(arg))
                        if arg
                        else (argv[i + 1] if i + 1 < len(argv) else None)
                    )
                    if not arg:
                        i += 1
                    if ch in name_options and target is not None:
                        names.append(target)
                    elif ch == "C" and target is not None:
                        walker.script(target, call.frame, origin=target.text, same_shell=True)
                    break
                j += 1
            i += 1
            continue
        if operand_names:
            names.append(word)
        i += 1
    for name in names:
        _computed(walker, name, call)


def _computed(walker: Walking, name: ResolvedWord, call: Call) -> None:
    text = name.value
    _assign.embedded(walker, name, call.frame)
    _assign.computed(walker, None if text is None else text.split("[")[0], call.frame, name.text)


def _read(walker: Walking, call: Call, base: str) -> BasesAfter:
    _names_from(walker, call, "adinNptu", "a", operand_names=True)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _mapfile(walker: Walking, call: Call, base: str) -> BasesAfter:
    _names_from(walker, call, "dnOsuCc", "", operand_names=True)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _printf(walker: Walking, call: Call, base: str) -> BasesAfter:
    argv = call.argv
    if len(argv) > 2 and argv[1].value == "-v":
        _computed(walker, argv[2], call)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _getopts(walker: Walking, call: Call, base: str) -> BasesAfter:
    if len(call.argv) > 2:
        _computed(walker, call.argv[2], call)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _positional_change(walker: Walking, call: Call, base: str) -> BasesAfter:
    argv = call.argv
    if (
        base == "shift"
        or any((w.value or "")[:1] not in "-+" for w in argv[1:])
        or any(w.value == "--" for w in argv[1:])
    ):
        call.frame.resolver.invalidate_positionals()
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _terminate(walker: Walking, call: Call, base: str) -> BasesAfter:
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return (frozenset(), frozenset())


def _kill(walker: Walking, call: Call, base: str) -> BasesAfter:
    recorder = walker.recorder
    recorder.looked_back[2] += 1
    check_kill(call.argv, unconfined=recorder.unconfined, own=recorder.own_pids)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


def _systemctl(walker: Walking, call: Call, base: str) -> BasesAfter:
    verb = power_verb(call.argv)
    if verb is not None:
        refuse(
            "blocked_binary",
            verb.text,
            f"{base} {verb.text} changes the machine's power state or target; it is never "
            "run by an agent.",
        )
    walker.recorder.record(call, base, mutating=False)
    return call.unchanged()


def _declare(walker: Walking, call: Call, base: str) -> BasesAfter:
    _assign.check_exported_functions(walker, base, call.argv)
    _assign.declaration_argv(walker, call.argv, call.frame)
    walker.recorder.record(call, base, mutating=False, text_only=True)
    return call.unchanged()


BUILTINS: dict[str, Callable[[Walking, Call, str], BasesAfter]] = {
    "cd": _cd,
    "pushd": _cd,
    "popd": _cd,
    "trap": _trap,
    "alias": _alias,
    "enable": _enable,
    "hash": _hash,
    "read": _read,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "printf": _printf,
    "getopts": _getopts,
    "set": _positional_change,
    "shift": _positional_change,
    "exit": _terminate,
    "return": _terminate,
    "kill": _kill,
    "systemctl": _systemctl,
    "loginctl": _systemctl,
    "declare": _declare,
    "typeset": _declare,
    "export": _declare,
    "readonly": _declare,
    "local": _declare,
}
