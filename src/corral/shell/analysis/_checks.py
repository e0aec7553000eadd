"""Judgements on single values: catastrophic delete targets, PATH entries, power verbs."""

from __future__ import annotations

import re
from collections.abc import Iterable

from corral.shell.analysis._escaped import (
    MARK,
    has_unknown,
    is_glob,
    quote,
    to_regex,
    unescape,
    unknown_as_empty,
)
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._tables import CRITICAL_TREES, SYSTEMCTL_POWER
from corral.shell.analysis._types import Chain, resolve_chain
from corral.shell.analysis._words import ResolvedWord

__all__ = ["critical_target", "path_entry_problem", "power_verb"]

_HOME_DIR = re.compile(r"^/(home|Users)/[^/]+$")
_VAR_CHILD = re.compile(r"^/var(/[^/]+)?$")
_TOP_SAMPLES = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/mnt",
    "/media",
    "/run",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/etc/passwd",
    "/var/lib",
    "/var/log",
    "/home/user",
)


def critical_target(
    e: str, *, home: str | None, cwd: str | None, chains: Iterable[Chain]
) -> str | None:
    """Why removing (or re-permissioning) ``e`` would be catastrophic, or ``None``."""
    chain_list = list(chains)
    forms = [e]
    if MARK in e:
        forms.append(unknown_as_empty(e))
    for index, form in enumerate(forms):
        if has_unknown(form):
            continue
        reason = _critical_form(form, home, cwd, chain_list)
        if reason:
            return reason + (" if the variable in it is empty" if index else "")
    return None


def _critical_form(e: str, home: str | None, cwd: str | None, chains: list[Chain]) -> str | None:
    home_e = quote(home) if home else "~"
    if e == "~" or e.startswith("~/"):
        e = home_e + e[1:]
    if not e.startswith(("/", "~")):
        relative = normalize(e)
        first = relative.split("/", 1)[0]
        if first == ".." or (is_glob(first) and to_regex(first).fullmatch("..")):
            return "a path that climbs out of the working directory with '..'"
        if cwd is None:
            return None
        candidates = []
        for chain in chains:
            base = resolve_chain(cwd, chain)
            if base is not None:
                candidates.append(normalize(quote(base) + "/" + e))
    else:
        candidates = [normalize(e)]
    for candidate in candidates:
        reason = _critical_absolute(candidate, home_e)
        if reason:
            return reason
    return None


def _critical_absolute(e: str, home_e: str) -> str | None:
    home = unescape(home_e) or "~"
    if not is_glob(e):
        value = unescape(e)
        if value is None:
            return None
        value = value.rstrip("/") or "/"
        if value == "/":
            return "the root directory"
        if value == home or home.startswith(value + "/"):
            return "your home folder"
        if value.count("/") == 1 and value != "~":
            return f"the top-level folder {value}"
        if _HOME_DIR.match(value) or value == "/root":
            return f"the home folder {value}"
        for tree in CRITICAL_TREES:
            if value == tree or value.startswith(tree + "/"):
                return f"the system folder {value}"
        if _VAR_CHILD.match(value):
            return f"the system folder {value}"
        return None
    regex = to_regex(e)
    samples = (*_TOP_SAMPLES, home, home + "/Documents", home + "/.config")
    for sample in samples:
        if regex.fullmatch(sample):
            where = "the root directory" if sample.count("/") == 1 else sample
            if sample.startswith(home + "/"):
                where = "everything in your home folder"
            return f"{where} (through the glob {unescape_glob(e)!r})"
    return None


def unescape_glob(e: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(e):
        if e[i] == "\\" and i + 1 < len(e):
            out.append(e[i + 1])
            i += 2
            continue
        out.append(e[i])
        i += 1
    return "".join(out)


def path_entry_problem(e: str, *, append: bool = False) -> str | None:
    """Why a ``PATH`` value is a hijack: an empty or relative entry, resolved per lookup."""
    entries = e.split(":")
    if append and entries and entries[0] == "":
        entries = entries[1:]
    for entry in entries:
        if entry == "":
            return "an empty entry, which means the current directory"
        if has_unknown(entry):
            continue
        value = unescape(entry) or ""
        if not value.startswith(("/", "~")):
            return f"the relative entry {value!r}"
    return None


def power_verb(argv: list[ResolvedWord]) -> ResolvedWord | None:
    """The power-state verb of ``systemctl``/``loginctl``, if any."""
    skip_next = False
    for word in argv[1:]:
        if skip_next:
            skip_next = False
            continue
        value = word.value
        if value is None:
            continue
        if value.startswith("-"):
            skip_next = value in ("-t", "-p", "-H", "-M", "-n", "-o", "-s", "--type",
                                  "--property", "--host", "--machine", "--signal")  # fmt: skip
            continue
        return word if value in SYSTEMCTL_POWER else None
    return None
