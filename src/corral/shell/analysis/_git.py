"""git: the options that make it run other programs, and what it writes.

git runs many configuration values through ``sh -c`` (``core.pager``, ``core.fsmonitor``,
``alias.x=!cmd``, ``credential.helper=!cmd``…), so ``git -c KEY=VALUE`` and
``git config KEY VALUE`` are analysed like a nested ``bash -c``: harmless values such as
``core.pager=cat`` pass, a blocked command inside is refused. Keys that load code from
elsewhere (``core.hooksPath``, ``include.path``, ``protocol.ext.allow``…) are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from corral.shell.analysis._escaped import MARK, quote
from corral.shell.analysis._words import ResolvedWord

__all__ = ["GitPlan", "classify_key", "plan_git"]

KeyKind = Literal["command", "hijack", "alias", "maybe_command", "helper"]

_COMMAND_KEYS = frozenset(
    {"core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.gitproxy",
     "sequence.editor", "diff.external", "gpg.program", "uploadpack.packobjectshook",
     "web.browser", "sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd",
     "sendemail.smtpserver"}
)  # fmt: skip
_MAYBE_COMMAND_KEYS = frozenset({"core.fsmonitor"})
_HIJACK_KEYS = frozenset(
    {"core.hookspath", "include.path", "init.templatedir", "protocol.allow", "core.worktree",
     "safe.directory", "uploadpack.allowanysha1inwant"}
)  # fmt: skip
_COMMAND_PATTERNS = re.compile(
    r"^(diff\.[^.]+\.(textconv|command)|merge\.[^.]+\.driver|filter\.[^.]+\.(clean|smudge|process)"
    r"|gpg\.[^.]+\.program|browser\.[^.]+\.cmd|difftool\.[^.]+\.cmd|mergetool\.[^.]+\.cmd"
    r"|man\.[^.]+\.cmd|remote\.[^.]+\.(uploadpack|receivepack)|core\.sshcommand)$"
)
_HIJACK_PATTERNS = re.compile(r"^(includeif\..+\.path|protocol\.[^.]+\.allow)$")
_BOOLEAN = frozenset({"true", "false", "yes", "no", "on", "off", "0", "1", ""})

_READ_ONLY = frozenset(
    {"status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree",
     "ls-remote", "rev-parse", "rev-list", "describe", "shortlog", "cat-file", "help",
     "version", "whatchanged", "cherry", "name-rev", "for-each-ref", "show-ref",
     "count-objects", "verify-commit", "verify-tag", "fsck", "var", "check-ignore",
     "check-attr", "show-branch", "range-diff", "diff-tree", "diff-files", "diff-index",
     "merge-base", "reflog", "config"}
)  # fmt: skip
_LISTING = frozenset({"branch", "tag", "remote", "stash", "worktree", "submodule"})


def classify_key(key: str, value: str | None) -> KeyKind | None:
    """How git treats the value of ``key`` (lower-cased section and name)."""
    lowered = key.lower()
    if lowered in _HIJACK_KEYS or _HIJACK_PATTERNS.match(lowered):
        return "hijack"
    if lowered.startswith("alias."):
        return "alias" if value is None or value.startswith("!") else None
    if lowered == "credential.helper" or re.match(r"^credential\..+\.helper$", lowered):
        return "helper"
    if lowered in _COMMAND_KEYS or _COMMAND_PATTERNS.match(lowered):
        return "command"
    if lowered in _MAYBE_COMMAND_KEYS or lowered.startswith("pager."):
        if value is not None and value.lower() in _BOOLEAN:
            return None
        return "command"
    return None


@dataclass(slots=True)
class GitPlan:
    """What one git invocation runs and touches."""

    scripts: list[ResolvedWord] = field(default_factory=list)
    """Strings git hands to a shell; one not known statically has an unknown escaped form."""
    hijack: list[tuple[ResolvedWord, str]] = field(default_factory=list)
    inner: list[list[ResolvedWord]] = field(default_factory=list)
    chdir: list[ResolvedWord] = field(default_factory=list)
    writes: list[ResolvedWord] = field(default_factory=list)
    mutating: bool = False
    subcommand: str | None = None


def _script_word(word: ResolvedWord, text: str | None) -> ResolvedWord:
    return ResolvedWord(word.text, MARK) if text is None else ResolvedWord(word.text, quote(text))


def _config_pair(plan: GitPlan, word: ResolvedWord, key: str | None, value: str | None) -> None:
    if key is None:
        plan.hijack.append((word, "the configuration key is not known before git runs"))
        return
    kind = classify_key(key, value)
    if kind is None:
        return
    if kind == "hijack":
        plan.hijack.append((word, f"{key!r} makes git load code or hooks from elsewhere"))
        return
    if kind == "alias":
        plan.scripts.append(_script_word(word, None if value is None else value[1:]))
        return
    if kind == "helper":
        if value is None:
            plan.scripts.append(_script_word(word, None))
        elif value.startswith("!"):
            plan.scripts.append(_script_word(word, value[1:]))
        elif "/" in value:
            plan.scripts.append(_script_word(word, value))
        return
    plan.scripts.append(_script_word(word, value))


def _assignment(plan: GitPlan, word: ResolvedWord, text: str | None) -> None:
    if text is None:
        plan.hijack.append((word, "the configuration is not known before git runs"))
        return
    key, eq, value = text.partition("=")
    _config_pair(plan, word, key, value if eq else "true")


_GLOBAL_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
     "--list-cmds", "--attr-source", "--exec-path"}
)  # fmt: skip


def plan_git(argv: list[ResolvedWord]) -> GitPlan:
    """Read git's global options and the parts of its subcommand that matter."""
    plan = GitPlan()
    i, n = 1, len(argv)
    while i < n:
        word = argv[i]
        value = word.value
        if value is None:
            plan.hijack.append((word, "git's option is not known before it runs"))
            return plan
        if not value.startswith("-"):
            break
        name, eq, inline = value.partition("=")
        if name in _GLOBAL_WITH_VALUE and not eq and name != "--exec-path":
            arg = argv[i + 1] if i + 1 < n else ResolvedWord("", "")
            text = arg.value
            i += 2
        else:
            arg, text = word, inline if eq else None
            i += 1
        if name == "-C":
            plan.chdir.append(arg)
        elif name == "-c":
            _assignment(plan, arg, text)
        elif name == "--config-env":
            key = None if text is None else text.partition("=")[0]
            kind = None if key is None else classify_key(key, None)
            if key is None or kind is not None:
                plan.hijack.append((arg, "a configuration value taken from the environment"))
        elif name == "--exec-path" and eq:
            plan.hijack.append((word, "--exec-path makes git run its helpers from elsewhere"))
        elif name in ("--git-dir", "--work-tree") and text is not None:
            plan.chdir.append(arg)
    if i >= n:
        return plan
    sub = argv[i].value
    plan.subcommand = sub
    rest = argv[i + 1 :]
    _subcommand(plan, sub or "", rest)
    if sub is not None and sub not in _READ_ONLY:
        listing = sub in _LISTING and all((w.value or "x").startswith("-") for w in rest)
        plan.mutating = not listing
    return plan


_SUB_SCRIPT_OPTIONS = {
    "clone": ("--upload-pack", "-u"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack", "-u"),
    "archive": ("--exec",),
    "push": ("--receive-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"),
    "rebase": ("--exec", "-x"),
    "difftool": ("--extcmd", "-x"),
    "grep": ("--open-files-in-pager", "-O"),
    "filter-branch": (
        "--tree-filter",
        "--index-filter",
        "--env-filter",
        "--parent-filter",
        "--msg-filter",
        "--commit-filter",
        "--tag-name-filter",
    ),
}


def _subcommand(plan: GitPlan, sub: str, rest: list[ResolvedWord]) -> None:
    options = _SUB_SCRIPT_OPTIONS.get(sub, ())
    operands: list[ResolvedWord] = []
    j = 0
    while j < len(rest):
        word = rest[j]
        value = word.value
        if value is None:
            operands.append(word)
            j += 1
            continue
        name, eq, inline = value.partition("=")
        if name in options:
            if eq:
                plan.scripts.append(_script_word(word, inline))
                j += 1
            elif name in ("-O", "--open-files-in-pager"):
                j += 1
            elif j + 1 < len(rest):
                plan.scripts.append(_script_word(rest[j + 1], rest[j + 1].value))
                j += 2
            else:
                j += 1
            continue
        if sub == "clone" and name in ("-c", "--config"):
            if eq:
                _assignment(plan, word, inline)
                j += 1
            elif j + 1 < len(rest):
                _assignment(plan, rest[j + 1], rest[j + 1].value)
                j += 2
            else:
                j += 1
            continue
        if sub == "clone" and name == "--template":
            plan.hijack.append((word, "--template copies hooks from elsewhere"))
            j += 1
            continue
        if sub == "archive" and name in ("-o", "--output"):
            target = (
                rest[j + 1]
                if not eq and j + 1 < len(rest)
                else ResolvedWord(word.text, word.escaped[9:])
            )
            plan.writes.append(target)
            j += 1 if eq else 2
            continue
        if not value.startswith("-") or value == "-":
            operands.append(word)
        j += 1
    if sub == "config":
        _git_config(plan, rest)
    elif sub == "submodule" and operands and operands[0].value == "foreach":
        tail = rest[rest.index(operands[0]) + 1 :]
        while tail and (tail[0].value or "").startswith("--"):
            tail = tail[1:]
        if tail:
            plan.scripts.append(_join(tail))
    elif sub == "bisect" and operands and operands[0].value == "run":
        tail = rest[rest.index(operands[0]) + 1 :]
        if tail:
            plan.inner.append(tail)
    elif sub == "clone":
        if len(operands) >= 2:
            plan.writes.append(operands[1])
        else:
            plan.writes.append(ResolvedWord(".", "."))


def _join(words: list[ResolvedWord]) -> ResolvedWord:
    values = [w.value for w in words]
    text = " ".join(w.text for w in words)
    if any(v is None for v in values):
        return ResolvedWord(text, MARK)
    return ResolvedWord(text, quote(" ".join(v for v in values if v is not None)))


_CONFIG_VALUE_OPTIONS = frozenset(
    {"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"}
)
_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--unset",
     "--unset-all", "--remove-section", "--rename-section", "--edit", "-e",
     "--get-color", "--get-colorbool", "--show-origin", "--show-scope", "--name-only"}
)  # fmt: skip


def _git_config(plan: GitPlan, rest: list[ResolvedWord]) -> None:
    operands: list[ResolvedWord] = []
    j = 0
    reading = False
    while j < len(rest):
        word = rest[j]
        value = word.value
        if value is not None and value.startswith("-"):
            name = value.partition("=")[0]
            if name in _CONFIG_READS:
                reading = True
            if name in _CONFIG_VALUE_OPTIONS and "=" not in value:
                j += 1
            j += 1
            continue
        operands.append(word)
        j += 1
    if operands and operands[0].value in ("get", "list", "edit", "unset", "rename-section",
                                          "remove-section"):  # fmt: skip
        return
    if operands and operands[0].value == "set":
        operands = operands[1:]
    if reading or len(operands) < 2:
        return
    key_word, value_word = operands[0], operands[1]
    _config_pair(plan, value_word, key_word.value, value_word.value)
