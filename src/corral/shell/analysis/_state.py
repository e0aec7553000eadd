"""State carried through the walk: where the shell stands (``cd``), what feeds stdin,
which functions exist, and one command call being judged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from corral.shell.analysis._frozen import fast_init
from corral.shell.analysis._parser import Node
from corral.shell.analysis._types import CdMove, Chain, Command, PathRef
from corral.shell.analysis._words import ResolvedWord, WordResolver

__all__ = [
    "MAX_BASES",
    "Bases",
    "BasesAfter",
    "BodyWalk",
    "Call",
    "Frame",
    "FunctionInfo",
    "Loc",
    "Redir",
    "StatementContext",
    "Stdin",
    "merge",
    "unknown_loc",
]

MAX_BASES = 8


class Loc(NamedTuple):
    """Where the shell stands: cwd chain, ``pushd`` stack and ``OLDPWD``."""

    cwd: Chain
    stack: tuple[Chain, ...] = ()
    old: Chain | None = None


Bases = frozenset[Loc]
BasesAfter = tuple[Bases, Bases]
"""Locations after a statement succeeded and after it failed."""

START: Bases = frozenset({Loc(())})


def unknown_loc() -> Loc:
    return Loc((None,))


def merge(*sets: Bases) -> Bases:
    """Union of location sets, collapsed to 'unknown' past :data:`MAX_BASES`."""
    if len(sets) == 2 and sets[0] == sets[1] and len(sets[0]) <= MAX_BASES:
        return sets[0]  # the common case: success and failure stand in the same place
    out: set[Loc] = set()
    for s in sets:
        out |= s
    if len(out) > MAX_BASES:
        return frozenset({unknown_loc()})
    return frozenset(out)


StdinKind = Literal["inherit", "pipe", "file", "heredoc", "herestring", "closed"]


@dataclass(frozen=True, slots=True)
class Stdin:
    """What feeds a command's standard input."""

    kind: StdinKind = "inherit"
    text: str | None = None
    """Here-doc or here-string text when statically known."""
    word: ResolvedWord | None = None
    carries: tuple[str, ...] = ()
    """For a pipe fed by ``find``: escaped glob patterns of every path it may print."""


@dataclass(frozen=True, slots=True)
class StatementContext:
    """How the current statement is reached."""

    stdin: Stdin = Stdin()
    subshell: bool = False
    spawning: bool = False
    """Inside a pipeline, a background job or a substitution (for fork-bomb detection)."""
    function: str | None = None
    """The function whose body is being walked."""

    def spawned(self, *, stdin: Stdin | None = None) -> StatementContext:
        return StatementContext(stdin or self.stdin, True, True, self.function)

    def with_stdin(self, stdin: Stdin) -> StatementContext:
        if stdin is self.stdin:
            return self
        return StatementContext(stdin, self.subshell, self.spawning, self.function)


fast_init(Stdin)
fast_init(StatementContext)


@dataclass(frozen=True, slots=True)
class BodyWalk:
    """What checking a function body at its definition found and changed, kept so that a
    call which would walk it again with nothing new can repeat it instead.

    It is kept only for a walk that read no ``$1…`` and called and defined no function; a
    call reuses it only from the same start (see
    :func:`corral.shell.analysis._functions.call`).
    """

    bases: Bases
    flow: BasesAfter
    writes: tuple[tuple[PathRef, str | None], ...]
    """The files the walk wrote (recorded again by a repeat)."""
    consumed: tuple[tuple[PathRef, str | None], ...]
    not_own: frozenset[str]
    """Variables the walk set to something other than a process id of its own."""
    output: str | None
    """What the walk's last command prints (see ``Recorder.last_output``)."""
    output_set: bool
    looked: tuple[int, int, int, int]
    """How often it read back each part of the recorder (see ``Recorder.looked_back``)."""
    writes_at: int | None
    """For a part it read back: what the part held when it started (``None``: not read)."""
    consumed_at: int | None
    pids_at: tuple[frozenset[str], frozenset[str]] | None
    output_at: tuple[str | None] | None
    cd_moves: tuple[CdMove, ...]
    calls: tuple[tuple[str, bool], ...]
    work: int
    backticks: int
    definitions: int
    stack: int
    """Python stack depth at the walk: a call from deeper could hit the recursion limit."""


@dataclass(slots=True)
class FunctionInfo:
    """A shell function: where its body is and whom it calls."""

    name: str
    body: Node
    frame: Frame
    calls: list[tuple[str, bool]] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    paths: list[PathRef] = field(default_factory=list)
    replayed: bool = False
    walk: BodyWalk | None = None


@dataclass(slots=True)
class Frame:
    """One source text being walked, in one shell process."""

    src: bytes
    resolver: WordResolver
    functions: dict[str, FunctionInfo]
    depth: int
    ctx: StatementContext = StatementContext()
    bases: Bases = START


@dataclass(slots=True)
class Redir:
    """A resolved file redirect."""

    operator: str
    fd: int | None
    word: ResolvedWord
    access: Literal["read", "write"] | None
    """``None`` for descriptor duplication (``2>&1``), which touches no file."""
    node: Node | None = None


@dataclass(slots=True)
class Call:
    """One command about to run, after the words were resolved."""

    argv: list[ResolvedWord]
    frame: Frame
    ctx: StatementContext
    bases: Bases
    redirects: list[Redir] = field(default_factory=list)
    wrappers: tuple[str, ...] = ()
    chdir: Chain = ()
    extra_paths: list[tuple[ResolvedWord, Literal["read", "write"]]] = field(default_factory=list)
    dynamic_args: bool = False
    scanned: bool = False

    @property
    def stdin(self) -> Stdin:
        return self.ctx.stdin

    def unchanged(self) -> BasesAfter:
        """The flow of a command that does not move the shell."""
        return (self.bases, self.bases)

    def inner(self, argv: list[ResolvedWord], wrapper: str) -> Call:
        return Call(
            argv=argv,
            frame=self.frame,
            ctx=self.ctx,
            bases=self.bases,
            redirects=self.redirects,
            wrappers=(*self.wrappers, wrapper),
            chdir=self.chdir,
            extra_paths=list(self.extra_paths),
            dynamic_args=self.dynamic_args,
            scanned=True,
        )
