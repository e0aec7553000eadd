"""Archivers, downloaders, search tools and interpreters: their outputs, inputs, and the
arguments that are patterns or code rather than paths."""

from __future__ import annotations

from collections.abc import Callable

from corral.shell.analysis._scan import Effects, consumed, scan_options
from corral.shell.analysis._words import ResolvedWord

__all__ = ["TOOLS", "interpreter"]


_TAR_ARG_LETTERS = "fCTXbHKNgVL"


def _tar(argv: list[ResolvedWord]) -> Effects:
    fx = Effects()
    words = list(argv)
    if len(words) > 1 and words[1].value and not words[1].value.startswith("-"):
        words[1] = ResolvedWord(words[1].text, "-" + words[1].escaped)
    scan = scan_options(
        words,
        _TAR_ARG_LETTERS,
        ["file", "directory", "files-from", "exclude-from", "blocking-factor", "format"],
    )
    create = bool(scan.flags & {"c", "r", "u", "A", "create", "append", "update"})
    extract = bool(scan.flags & {"x", "extract", "get"})
    archives = scan.get("f", "file")
    directories = scan.get("C", "directory")
    for word in archives:
        fx.targets.append((word, "write" if create else "read"))
    for word in scan.get("T", "files-from", "X", "exclude-from"):
        fx.targets.append((word, "read"))
    if extract:
        if directories:
            fx.targets.extend((word, "write") for word in directories)
        else:
            fx.targets.append((ResolvedWord(".", "."), "write"))
    elif directories:
        fx.chdir = directories[-1]
    for index in scan.operands:
        fx.targets.append((argv[index], "read"))
    fx.mutating = create or extract
    fx.skip |= set(range(1, len(argv)))
    return fx


def _unzip(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "dxP", [])
    fx = Effects(mutating=not (scan.flags & {"l", "t", "v", "p", "Z"}))
    if scan.operands:
        fx.targets.append((argv[scan.operands[0]], "read"))
    if fx.mutating:
        directories = scan.get("d")
        fx.targets.extend((w, "write") for w in directories or [ResolvedWord(".", ".")])
    fx.skip |= set(range(1, len(argv)))
    return fx


def _zip(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "bntPxi", [])
    fx = Effects(mutating=True)
    operands = scan.operands
    if operands:
        fx.targets.append((argv[operands[0]], "write"))
        fx.targets.extend((argv[i], "read") for i in operands[1:])
    fx.skip |= set(range(1, len(argv)))
    return fx


def _compress(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "S", ["suffix"])
    to_stdout = bool(scan.flags & {"c", "stdout", "to-stdout", "t", "test", "l", "list"})
    fx = Effects(mutating=not to_stdout)
    for index in scan.operands:
        fx.targets.append((argv[index], "read" if to_stdout else "write"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _output_option(
    argv: list[ResolvedWord], short_arg: str, long_arg: str, writes: str, reads: str = ""
) -> Effects:
    scan = scan_options(argv, short_arg, long_arg.split())
    fx = Effects()
    for name in writes.split():
        for word in scan.get(name):
            fx.targets.append((word, "write"))
            fx.mutating = True
    for name in reads.split():
        fx.targets.extend((word, "read") for word in scan.get(name))
    fx.skip |= consumed(scan)
    return fx


def _curl(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(
        argv,
        "oTKcbDdFHuAeEXxmrwzYy",
        "output upload-file config cookie-jar cookie dump-header data data-binary data-raw "
        "data-urlencode form header user user-agent referer request proxy output-dir "
        "max-time connect-timeout retry cacert cert key write-out".split(),
    )
    fx = Effects()
    for word in scan.get("o", "output", "c", "cookie-jar", "D", "dump-header", "output-dir"):
        fx.targets.append((word, "write"))
        fx.mutating = True
    if scan.flags & {"O", "remote-name", "remote-name-all"}:
        fx.targets.append((ResolvedWord(".", "."), "write"))
        fx.mutating = True
    for word in scan.get("T", "upload-file", "K", "config", "cacert", "cert", "key"):
        fx.targets.append((word, "read"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _wget(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "OPoaiUtTeBw", ["output-document", "directory-prefix", "output-file",
                                       "append-output", "input-file", "user-agent", "tries",
                                       "timeout", "execute", "base", "wait"])  # fmt: skip
    fx = Effects(mutating=True)
    outputs = scan.get("O", "output-document", "P", "directory-prefix")
    fx.targets.extend((w, "write") for w in outputs or [ResolvedWord(".", ".")])
    fx.targets.extend((w, "write") for w in scan.get("o", "output-file", "a", "append-output"))
    fx.targets.extend((w, "read") for w in scan.get("i", "input-file"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _first_operand_is_pattern(
    argv: list[ResolvedWord], short_arg: str, long_arg: str, given: str
) -> Effects:
    scan = scan_options(argv, short_arg, long_arg.split())
    fx = Effects()
    operands = list(scan.operands)
    if not any(scan.get(name) for name in given.split()) and operands:
        fx.skip.add(operands[0])
    for name in ("f", "file", "from-file"):
        fx.targets.extend((w, "read") for w in scan.get(name))
    fx.skip |= consumed(scan)
    return fx


def _grep(argv: list[ResolvedWord]) -> Effects:
    return _first_operand_is_pattern(
        argv,
        "efABCmdDgtTM",
        "regexp file after-context before-context context max-count include exclude "
        "exclude-dir glob type type-add max-depth color colors",
        "e regexp f file",
    )


def _awk(argv: list[ResolvedWord]) -> Effects:
    fx = _first_operand_is_pattern(argv, "fvFi", "file assign field-separator include", "f file")
    if any(w.value == "inplace" for w in argv):
        fx.mutating = True
    return fx


def _jq(argv: list[ResolvedWord]) -> Effects:
    fx = Effects()
    i = 1
    filter_seen = False
    while i < len(argv):
        value = argv[i].value or ""
        if value in ("--arg", "--argjson"):
            fx.skip.update({i, i + 1, i + 2})
            i += 3
            continue
        if value in ("--slurpfile", "--rawfile"):
            fx.skip.update({i, i + 1})
            if i + 2 < len(argv):
                fx.targets.append((argv[i + 2], "read"))
                fx.skip.add(i + 2)
            i += 3
            continue
        if value in ("-f", "--from-file"):
            filter_seen = True
            if i + 1 < len(argv):
                fx.targets.append((argv[i + 1], "read"))
                fx.skip.update({i, i + 1})
            i += 2
            continue
        if not value.startswith("-") and not filter_seen and argv[i].value is not None:
            fx.skip.add(i)
            filter_seen = True
        i += 1
    return fx


def interpreter(argv: list[ResolvedWord]) -> Effects:
    fx = Effects()
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            break
        if value in ("-c", "-e", "-E", "-r", "--eval", "-p", "--print", "-m", "-W", "-X", "-O"):
            fx.skip.update({i, i + 1})
            if value in ("-c", "-e", "-E", "-r", "--eval", "-p", "--print", "-m"):
                return fx
            i += 2
            continue
        if value.startswith("-"):
            fx.skip.add(i)
            i += 1
            continue
        fx.targets.append((argv[i], "read"))
        fx.skip.add(i)
        break
    return fx


def _sqlite(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "", ["cmd", "init", "separator", "newline", "nullvalue"])
    fx = Effects()
    if scan.operands:
        fx.targets.append((argv[scan.operands[0]], "write"))
        fx.mutating = True
        fx.skip.update(scan.operands)
    fx.skip |= consumed(scan)
    return fx


def _sort(argv: list[ResolvedWord]) -> Effects:
    return _output_option(argv, "otSTk", "output temporary-directory buffer-size key", "o output")


def _patch(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "oidpBDFrVYzg", ["output", "input", "directory", "reject-file"])
    fx = Effects(mutating=True)
    fx.targets.extend((w, "write") for w in scan.get("o", "output", "r", "reject-file"))
    fx.targets.extend((w, "read") for w in scan.get("i", "input"))
    directories = scan.get("d", "directory")
    if directories:
        fx.chdir = directories[-1]
    if scan.operands:
        fx.targets.append((argv[scan.operands[0]], "write"))
        fx.targets.extend((argv[i], "read") for i in scan.operands[1:])
    else:
        fx.targets.append((ResolvedWord(".", "."), "write"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


def _make(argv: list[ResolvedWord]) -> Effects:
    scan = scan_options(argv, "CfIjloW", ["directory", "file", "makefile", "include-dir", "jobs"])
    fx = Effects()
    directories = scan.get("C", "directory")
    if directories:
        fx.chdir = directories[-1]
    fx.targets.extend((w, "read") for w in scan.get("f", "file", "makefile"))
    fx.skip |= set(scan.operands) | consumed(scan)
    return fx


TOOLS: dict[str, Callable[[list[ResolvedWord]], Effects]] = {
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "unzip": _unzip,
    "zip": _zip,
    "gzip": _compress,
    "gunzip": _compress,
    "bzip2": _compress,
    "bunzip2": _compress,
    "xz": _compress,
    "unxz": _compress,
    "zstd": _compress,
    "unzstd": _compress,
    "lz4": _compress,
    "sort": _sort,
    "patch": _patch,
    "curl": _curl,
    "wget": _wget,
    "grep": _grep,
    "egrep": _grep,
    "fgrep": _grep,
    "rg": _grep,
    "ag": _grep,
    "ack": _grep,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "jq": _jq,
    "yq": _jq,
    "sqlite3": _sqlite,
    "make": _make,
    "gmake": _make,
}
