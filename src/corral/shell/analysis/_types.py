"""Values the analyser returns: the verdict and everything the URI-policy gate needs.

Every value is a frozen dataclass, so a gate, a cache or a test can keep and compare them
without re-parsing the command.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Literal, get_args

from corral.errors import PolicyDenied
from corral.shell.analysis._frozen import fast_init

__all__ = [
    "RULES",
    "Access",
    "Analysis",
    "CdMove",
    "Chain",
    "Command",
    "PathRef",
    "Redirect",
    "Rule",
    "Word",
    "resolve_chain",
]

Rule = Literal[
    "control_character",
    "too_large",
    "parse_error",
    "nesting_too_deep",
    "blocked_binary",
    "eval",
    "fork_bomb",
    "dangerous_rm",
    "dangerous_permissions",
    "dangerous_kill",
    "host_control",
    "block_device",
    "network_redirect",
    "unresolvable_command",
    "dynamic_script",
    "exec_option",
    "interpreter_code",
    "unreadable_code",
    "local_url",
    "absolute_paths",
    "shell_stdin",
    "env_hijack",
    "config_hijack",
    "shell_hijack",
    "protected_path",
]
"""Stable identifiers of the refusals; clients may match on them."""

RULES: tuple[Rule, ...] = get_args(Rule)

Access = Literal["read", "write", "exec"]
"""What a path needs: read, write (mutating commands, output redirects) or exec (a new cwd)."""

Chain = tuple[str | None, ...]
"""The literal ``cd`` targets applied since the command started, oldest first.

``()`` is the call's own cwd. ``None`` marks a move whose target is not statically known;
a path resolved against such a chain cannot be resolved.
"""


def resolve_chain(cwd: str, chain: Chain) -> str | None:
    """Apply the ``cd`` moves in ``chain`` to ``cwd``; ``None`` when a move is unknown."""
    here = cwd
    for step in chain:
        if step is None:
            return None
        here = _norm(step if step.startswith("/") else posixpath.join(here, step))
    return here


def _norm(path: str) -> str:
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out


@dataclass(frozen=True, slots=True, kw_only=True)
class Word:
    """One shell word after quote removal and expansion of what is statically known."""

    text: str
    """The word as written in the command."""
    value: str | None
    """The value bash would pass, or ``None`` when part of it is not statically known."""
    glob: bool = False
    """The word holds unquoted glob characters that the shell would expand."""

    @property
    def static(self) -> bool:
        """True when :attr:`value` is known."""
        return self.value is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class PathRef:
    """A path the command touches, with the access it needs."""

    text: str
    """The word as written."""
    path: str | None
    """Quotes removed, ``~`` expanded when the home folder is known, ``.``/``..`` collapsed.

    For a glob it is a pattern in :mod:`glob` syntax (literal metacharacters bracketed).
    ``None`` when the path is not statically known; a gate should deny such a path for
    write access and treat it with suspicion for read access.
    """
    access: Access
    origin: Literal["argument", "redirect", "cd", "option"]
    command: str
    """The resolved name of the command the path belongs to (``""`` for a compound's redirect)."""
    glob: bool = False
    bases: tuple[Chain, ...] = ((),)
    """Every ``cd`` chain the path may be relative to (a ``cd`` can fail, so several)."""
    resolved: tuple[str, ...] = ()
    """Absolute candidates when the analyser was given a cwd and the path is static."""
    physical: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """When a ``..`` follows a name (``link/../x``): the candidates with that ``..`` kept, for
    a gate to resolve on disk as the kernel does (the name may be a symlink, and ``..``
    then leaves the folder it points to, not the one that holds it)."""

    def resolve(self, cwd: str) -> tuple[str, ...] | None:
        """Absolute candidates of this path against ``cwd``; ``None`` if any is unknowable."""
        if self.path is None:
            return None
        if self.path.startswith("/"):
            return (_norm(self.path),)
        if self.path.startswith("~"):
            return None
        out: list[str] = []
        for chain in self.bases:
            base = resolve_chain(cwd, chain)
            if base is None:
                return None
            candidate = _norm(posixpath.join(base, self.path))
            if candidate not in out:
                out.append(candidate)
        return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Redirect:
    """A file redirect (here-documents and here-strings are not files and are left out)."""

    operator: str
    fd: int | None
    target: Word
    access: Access


@dataclass(frozen=True, slots=True, kw_only=True)
class CdMove:
    """A ``cd``/``pushd``/``popd`` in the order written."""

    kind: Literal["cd", "pushd", "popd"]
    target: Word | None
    """``None`` for ``popd`` and for a bare ``cd`` (which goes home)."""
    scoped: bool
    """True when the move happens in a subshell and does not outlive it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """A command the shell would run, after wrappers were resolved to it."""

    name: str
    """Basename of the program or builtin actually run (``rm`` for ``timeout 5 /bin/rm``)."""
    argv: tuple[Word, ...]
    """The resolved words; ``argv[0]`` is the command as written after the wrappers."""
    wrappers: tuple[str, ...] = ()
    """Wrapper programs stripped to reach it, outermost first (``("timeout", "env")``)."""
    mutating: bool = False
    paths: tuple[PathRef, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    dynamic_args: bool = False
    """More arguments arrive at run time (``xargs``, ``find -exec … {}``)."""
    depth: int = 0
    """How many re-parsed script levels (``bash -c``, here-docs) it sits in."""
    function: bool = field(default=False, repr=False)
    """A call of a shell function the script defined (its body's commands are listed too)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """The verdict on one command line, and what it would touch if allowed."""

    command: str
    allowed: bool
    rule: Rule | None = None
    word: str | None = None
    """The offending word as the user wrote it."""
    detail: str = ""
    commands: tuple[Command, ...] = ()
    paths: tuple[PathRef, ...] = ()
    """Every path touched, commands' arguments and redirect targets, in order."""
    cd_moves: tuple[CdMove, ...] = ()
    cwd: str | None = None
    protected_paths: tuple[str, ...] = field(default=(), repr=False)

    def error(self) -> PolicyDenied:
        """The refusal as an error for the dispatch pipeline (call only when refused)."""
        if self.allowed:
            raise ValueError("error() called on an allowed analysis")
        return PolicyDenied(
            self.detail,
            code="policy_denied",
            data={"guard": "analysis", "rule": self.rule, "word": self.word},
        )

    def raise_if_refused(self) -> None:
        """Raise :class:`corral.errors.PolicyDenied` when the command was refused."""
        if not self.allowed:
            raise self.error()


for _cls in (Word, PathRef, Redirect, CdMove, Command, Analysis):
    fast_init(_cls)
