"""Files a command line writes and then runs: scripts, git configuration and hooks, shell
start-up files, makefiles and the like.

``printf 'reboot\\n' > s.sh; bash s.sh`` runs text the analysis saw only as data. When a
command runs a file written earlier in the same command line, the written content is
analysed as what it is (a shell script, Python, a makefile's recipes, ``package.json``
scripts, git configuration) when it is literal, and the command is refused when it is not.
Git reads ``.git/config`` and ``.git/hooks/`` on every later call, so without the sandbox
a write there is judged at once, whether or not git runs in the same command line.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable

from corral.shell.analysis._cmdopts import makefile_recipes, option_values
from corral.shell.analysis._consumed import CONSUMERS, MAKEFILES, STARTUP_FILES
from corral.shell.analysis._escaped import quote
from corral.shell.analysis._git import classify_key
from corral.shell.analysis._inline import PYTHON, check_code
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Call
from corral.shell.analysis._tables import SHELLS
from corral.shell.analysis._types import PathRef
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = ["check_consumers", "check_git_writes", "check_run", "git_kind", "refuse_unknown_git"]


def _keys(ref: PathRef) -> frozenset[str] | None:
    if ref.resolved:
        return frozenset(ref.resolved)
    if ref.path is None:
        return None
    return frozenset(f"{ref.path}@{chain!r}" for chain in ref.bases)


def _names(ref: PathRef) -> Iterable[str]:
    for path in (*ref.resolved, ref.path or ""):
        if path:
            yield path


def _refuse_unknown(word: str, why: str) -> None:
    refuse(
        "dynamic_script",
        word,
        f"{word!r} {why}, with content the analysis cannot see; write the file with literal "
        "text (printf '…' > file) or review it before running it in a separate command.",
    )


def refuse_unknown_git(word: str) -> None:
    """A write to git's configuration or hooks whose content is not known."""
    _refuse_unknown(word, "is git configuration or a hook that git runs on its next call")


def _judge(walker: Walking, call: Call, content: str | None, kind: str, origin: str) -> bool:
    """Analyse ``content`` as a ``kind`` file (shell, python, make, package.json…); True
    when it was a shell script, which the analysis reads whole."""
    if content is None:
        _refuse_unknown(origin, "was written by this same command line and is then run")
    assert content is not None
    if kind == "exec":
        first = content.split("\n", 1)[0]
        kind = "shell"
        if first.startswith("#!"):
            parts = first[2:].split()
            program = posixpath.basename(parts[0]) if parts else "sh"
            if program == "env" and len(parts) > 1:
                program = parts[-1]
            kind = "shell" if program in SHELLS else program
    if kind == "shell":
        word = ResolvedWord(origin, quote(content))
        walker.script(word, call.frame, origin=origin, same_shell=False)
        return True
    if kind in ("make", "ninja", "indented"):
        word = ResolvedWord(origin, quote(_recipes(kind, content)))
        walker.script(word, call.frame, origin=origin, same_shell=False)
    elif kind == "package.json":
        _package_json(walker, call, content, origin)
    elif kind == "git-config":
        _git_config(walker, call, content, origin)
    elif PYTHON.match(kind) or kind in ("perl", "ruby", "node", "awk", "php", "lua"):
        check_code(walker, call, kind, content, origin)
    else:
        _refuse_unknown(origin, f"is a {kind} file written by this same command line and run")
    return False


_NINJA_COMMAND = re.compile(r"^\s+command\s*=\s*(.*)$", re.MULTILINE)


def _recipes(kind: str, content: str) -> str:
    if kind == "ninja":
        return "\n".join(_NINJA_COMMAND.findall(content))
    if kind == "indented":
        return "\n".join(line.strip().lstrip("@-") for line in content.split("\n")
                         if line[:1] in (" ", "\t"))  # fmt: skip
    return makefile_recipes(content)


def _package_json(walker: Walking, call: Call, content: str, origin: str) -> None:
    try:
        data = json.loads(content)
    except ValueError:
        return
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return
    for value in scripts.values():
        if isinstance(value, str):
            word = ResolvedWord(origin, quote(value))
            walker.script(word, call.frame, origin=origin, same_shell=False)


_SECTION = re.compile(r'^\s*\[\s*([^\]\s"]+)(?:\s+"([^"]*)")?\s*\]\s*$')
_ENTRY = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:=\s*(.*))?$")


def _git_config(walker: Walking, call: Call, content: str, origin: str) -> None:
    """Git configuration text: values git runs are analysed, code-loading keys refused."""
    section = ""
    for line in content.split("\n"):
        stripped = line.split("#", 1)[0].split(";", 1)[0].strip()
        header = _SECTION.match(stripped)
        if header is not None:
            name, sub = header.group(1), header.group(2)
            section = f"{name}.{sub}" if sub is not None else name
            continue
        entry = _ENTRY.match(stripped)
        if entry is None or not section:
            continue
        key = f"{section}.{entry.group(1)}"
        value = (entry.group(2) or "true").strip().strip('"')
        kind = classify_key(key, value)
        if kind == "hijack":
            refuse("config_hijack", origin, f"The git configuration written sets {key!r}, "
                   "which makes git load code from elsewhere; leave it out.")  # fmt: skip
        if kind is not None:
            script = value[1:] if value.startswith("!") else value
            walker.script(ResolvedWord(origin, quote(script)), call.frame, origin=origin,
                          same_shell=False)  # fmt: skip


def check_run(walker: Walking, call: Call, word: ResolvedWord, kind: str) -> bool:
    """``word`` is run as a ``kind`` file: judge what this command line wrote to it. True
    when this command line wrote it whole as a shell script the analysis has read."""
    writes = walker.recorder.writes
    walker.recorder.looked_back[0] += 1
    if not writes:
        return False
    ref = walker.recorder.path_ref(word, "read", "argument", kind, call.bases, call.chdir)
    keys = None if ref is None else _keys(ref)
    read = False
    for written, content in writes:
        written_keys = _keys(written)
        if written_keys is None or keys is None:
            if walker.recorder.unconfined:
                _refuse_unknown(word.text, "may have been written by this same command line")
            continue
        if written_keys & keys:
            # Only the last write counts: an append adds to a file written earlier.
            judged = _judge(walker, call, content, kind, word.text)
            read = judged and id(written) not in walker.recorder.appended
    return read


def git_kind(ref: PathRef) -> str | None:
    """``"exec"`` for a git hook, ``"git-config"`` for ``.git/config``, else ``None``."""
    for path in _names(ref):
        if "/.git/hooks/" in f"/{path}":
            return "exec"
        if f"/{path}".endswith("/.git/config"):
            return "git-config"
    return None


def check_git_writes(walker: Walking, call: Call, start: int = 0) -> None:
    """Writes to ``.git/config`` or ``.git/hooks/`` since ``start``, which git runs."""
    if start == 0:
        walker.recorder.looked_back[0] += 1
    for written, content in walker.recorder.writes[start:]:
        kind = git_kind(written)
        if kind is not None:
            _judge(walker, call, content, kind, written.text)


def check_consumers(walker: Walking, call: Call, base: str) -> None:
    """``base`` runs commands from project files (makefiles, start-up files, git's
    configuration…): judge the ones this command line wrote."""
    if base == "git":
        check_git_writes(walker, call)
        return
    if base in ("make", "gmake"):
        for _, word in option_values(call.argv, "f", ("file", "makefile")):
            if word.value not in ("-", "/dev/stdin"):
                check_run(walker, call, word, "make")
    pattern = CONSUMERS.get(base)
    startup = base in SHELLS and _login_or_interactive(call)
    if pattern is None and not startup:
        return
    walker.recorder.looked_back[1] += 1
    for written, content in walker.recorder.consumed_writes:
        for path in _names(written):
            name = posixpath.basename(path)
            if startup and name in STARTUP_FILES:
                _judge(walker, call, content, "shell", written.text)
                break
            if pattern is not None and pattern.match(name):
                _judge(walker, call, content, _consumer_kind(name), written.text)
                break


def _consumer_kind(name: str) -> str:
    if MAKEFILES.match(name):
        return "make"
    if name == "package.json":
        return "package.json"
    if name.endswith(".py"):
        return "python3"
    if name.endswith(".ninja"):
        return "ninja"
    if name.lower().endswith("justfile"):
        return "indented"
    return name


def _login_or_interactive(call: Call) -> bool:
    for word in call.argv[1:]:
        value = word.value or ""
        if value in ("--login", "--rcfile", "--init-file", "-i", "-l"):
            return True
        if value.startswith("-") and not value.startswith("--") and set(value[1:]) & {"i", "l"}:
            return True
    return False
