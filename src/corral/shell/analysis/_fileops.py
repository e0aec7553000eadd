"""File utilities that change things: ``rm``, ``mv``, ``cp``, ``rsync``, ``dd``, ``chmod``,
``sed -i``… which arguments they write and which they only read."""

from __future__ import annotations

import re
from collections.abc import Callable

from corral.shell.analysis._escaped import MARK
from corral.shell.analysis._scan import Effects, consumed, option_tail, scan_options
from corral.shell.analysis._types import Access
from corral.shell.analysis._words import ResolvedWord

__all__ = ["FILE_OPERATIONS"]


def _all_write(argv: list[ResolvedWord], short_arg: str = "", long_arg: str = "") -> Effects:
    scan = scan_options(argv, short_arg, long_arg.split())
    fx = Effects(mutating=True, recursive=bool(scan.flags & {"r", "R", "recursive"}))
    for index in scan.operands:
        fx.targets.append((argv[index], "write"))
        fx.skip.add(index)
    fx.skip |= consumed(scan)
    return fx


def _rm(argv: list[ResolvedWord]) -> Effects:
    fx = _all_write(argv)
    fx.destructive = [word for word, _ in fx.targets]
    return fx


def _destroys(fx: Effects) -> Effects:
    fx.destructive = [word for word, _ in fx.targets]
    return fx


def _mv(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "tS", ["target-directory", "suffix"])
    fx = Effects(mutating=True)
    for index in scan.operands:
        fx.targets.append((argv[index], "write"))
        fx.skip.add(index)
    for word in scan.get("t", "target-directory"):
        fx.targets.append((word, "write"))
    fx.skip |= consumed(scan)
    fx.destructive = [argv[i] for i in scan.operands[:-1]] if "t" not in scan.values else []
    return fx


def _copy_like(
    argv: list[ResolvedWord], short_arg: str = "tS", long_arg: str = "target-directory"
) -> Effects:
    scan = scan_options(argv, short_arg, long_arg.split())
    fx = Effects(mutating=True, recursive=bool(scan.flags & {"r", "R", "a", "recursive"}))
    targets = scan.get("t", "target-directory")
    operands = scan.operands
    if targets:
        fx.targets.extend((word, "write") for word in targets)
        fx.targets.extend((argv[i], "read") for i in operands)
    elif "d" in scan.flags and argv[0].value in ("install",):
        fx.targets.extend((argv[i], "write") for i in operands)
    elif operands:
        fx.targets.extend((argv[i], "read") for i in operands[:-1])
        fx.targets.append((argv[operands[-1]], "write"))
    fx.skip |= set(operands) | consumed(scan)
    return fx


def _remote(value: str | None) -> bool:
    if value is None or ":" not in value:
        return False
    head = value.split(":", 1)[0]
    return "/" not in head


def _rsync(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "eTfB", ["rsh", "rsync-path", "temp-dir", "filter", "exclude-from"])
    fx = Effects(mutating=True, recursive=True)
    fx.scripts.extend(scan.get("e", "rsh"))
    local = [i for i in scan.operands if not _remote(argv[i].value)]
    remote_last = bool(scan.operands) and _remote(argv[scan.operands[-1]].value)
    for i in local:
        last = i == scan.operands[-1] and not remote_last
        fx.targets.append((argv[i], "write" if last else "read"))
    if any(flag.startswith("delete") for flag in scan.flags) and local and not remote_last:
        fx.destructive.append(argv[local[-1]])
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _scp(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "cFiJloPSDX")
    fx = Effects(mutating=True)
    fx.scripts.extend(scan.get("S"))
    fx.scripts.extend(_ssh_option_scripts(scan.get("o")))
    local = [i for i in scan.operands if not _remote(argv[i].value)]
    for i in local:
        access: Access = "write" if i == scan.operands[-1] else "read"
        fx.targets.append((argv[i], access))
    for word in scan.get("i", "F"):
        fx.targets.append((word, "read"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


_SSH_COMMAND_OPTIONS = ("proxycommand", "localcommand", "knownhostscommand")


def _ssh_option_scripts(options: list[ResolvedWord]) -> list[ResolvedWord]:
    out: list[ResolvedWord] = []
    for word in options:
        value = word.value
        if value is None:
            out.append(ResolvedWord(word.text, MARK))
            continue
        key, sep, rest = value.replace("=", " ", 1).partition(" ")
        if sep and key.lower() in _SSH_COMMAND_OPTIONS:
            out.append(option_tail(word, value[: len(value) - len(rest)]))
    return out


def _ssh(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "BbcDEeFIiJLlmOoPpQRSWw")
    fx = Effects()
    fx.scripts.extend(_ssh_option_scripts(scan.get("o")))
    for word in scan.get("i", "F"):
        fx.targets.append((word, "read"))
    for word in scan.get("E"):
        fx.targets.append((word, "write"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


_DD_KEYS: tuple[tuple[str, Access], ...] = (("of=", "write"), ("if=", "read"))


def _dd(argv: list[ResolvedWord]) -> Effects:
    fx = Effects()
    for index, word in enumerate(argv[1:], start=1):
        for key, access in _DD_KEYS:
            if word.escaped.startswith(key):
                fx.targets.append((option_tail(word, key), access))
                fx.mutating = fx.mutating or access == "write"
        fx.skip.add(index)
    return fx


_CHMOD_MODE = re.compile(r"^([ugoa]*[-+=][rwxXstugo]*,?)+$|^[0-7]{1,4}$")


def _chmod(argv: list[ResolvedWord]) -> Effects:
    fx = Effects(mutating=True)
    reference = False
    operands: list[int] = []
    for index, word in enumerate(argv[1:], start=1):
        value = word.value or ""
        if value.startswith("--reference"):
            reference = True
        elif value in ("-R", "--recursive") or (
            value.startswith("-") and not _CHMOD_MODE.match(value) and "R" in value
        ):
            fx.recursive = True
        elif value.startswith("-") and not (argv[0].value == "chmod" and _CHMOD_MODE.match(value)):
            continue
        else:
            operands.append(index)
    files = operands if reference else operands[1:]
    fx.skip |= set(operands)
    fx.targets.extend((argv[i], "write") for i in files)
    fx.destructive = [argv[i] for i in files]
    return fx


def _sed(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "efl", ["expression", "file", "line-length"])
    in_place = any(f in scan.flags for f in ("i", "in-place")) or any(
        (w.value or "").startswith("-i") for w in argv[1:]
    )
    fx = Effects(mutating=in_place)
    operands = list(scan.operands)
    if not scan.get("e", "expression", "f", "file") and operands:
        fx.skip.add(operands.pop(0))
    for word in scan.get("f", "file"):
        fx.targets.append((word, "read"))
    for index in operands:
        fx.targets.append((argv[index], "write" if in_place else "read"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _perl(argv: list[ResolvedWord]) -> Effects:
    in_place = False
    fx = Effects()
    code = False
    index = 1
    while index < len(argv):
        value = argv[index].value or ""
        if value == "--" or not value.startswith("-"):
            break
        cluster = value[1:]
        if cluster[:1] not in ("M", "I", "x") and "i" in cluster.split("e")[0].split("E")[0]:
            in_place = True
        if cluster.endswith(("e", "E")) and index + 1 < len(argv):
            code = True
            fx.skip.update({index, index + 1})
            index += 2
            continue
        if cluster[:1] in ("M", "I", "x") and len(cluster) == 1 and index + 1 < len(argv):
            fx.skip.update({index, index + 1})
            index += 2
            continue
        fx.skip.add(index)
        index += 1
    rest = list(range(index, len(argv)))
    if not code and rest:
        fx.targets.append((argv[rest[0]], "read"))
        fx.skip.add(rest.pop(0))
    for i in rest:
        fx.targets.append((argv[i], "write" if in_place else "read"))
        fx.skip.add(i)
    fx.mutating = in_place
    return fx


FILE_OPERATIONS: dict[str, Callable[[list[ResolvedWord]], Effects]] = {
    "rm": _rm,
    "unlink": _rm,
    "rmdir": _rm,
    "shred": lambda a: _destroys(_all_write(a, "ns", "iterations size random-source")),
    "touch": lambda a: _all_write(a, "drt", "date reference"),
    "mkdir": lambda a: _all_write(a, "mZ", "mode context"),
    "mkfifo": lambda a: _all_write(a, "mZ", "mode context"),
    "mknod": lambda a: _all_write(a, "mZ", "mode context"),
    "truncate": lambda a: _all_write(a, "sr", "size reference"),
    "fallocate": lambda a: _all_write(a, "lon", "length offset"),
    "tee": _all_write,
    "chattr": lambda a: _all_write(a, "pv"),
    "setfacl": lambda a: _all_write(a, "mMxX", "modify modify-file remove remove-file set"),
    "mv": _mv,
    "cp": _copy_like,
    "ln": _copy_like,
    "install": lambda a: _copy_like(a, "tSmogC", "target-directory suffix mode owner group"),
    "rsync": _rsync,
    "scp": _scp,
    "ssh": _ssh,
    "sftp": _scp,
    "dd": _dd,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "sed": _sed,
    "gsed": _sed,
    "perl": _perl,
}
