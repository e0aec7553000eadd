"""The walker as its statement and command handlers see it.

:class:`corral.shell.analysis._walker.Walker` hands itself to ``_argv``, ``_assign``,
``_builtins``, ``_compound``, ``_functions``, ``_handlers``, ``_redirects`` and ``_shells``,
and they call back into it. They type it as :class:`Walking`, declared here below all of
them, so no import goes back up to ``_walker``; ``Walker`` satisfies the protocol
structurally (mypy checks it wherever ``Walker`` passes ``self``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from corral.shell.analysis._parser import Node
from corral.shell.analysis._records import Recorder
from corral.shell.analysis._state import Bases, BasesAfter, Call, Frame, Redir, StatementContext
from corral.shell.analysis._words import ResolvedWord, Sink

__all__ = ["FrameSink", "Walking"]


class FrameSink(Sink, Protocol):
    """A word resolver's sink that reports on behalf of the frame it is given."""

    frame: Frame | None


class Walking(Protocol):
    """What the handlers use of the walker: its recorder, settings and walking steps."""

    @property
    def recorder(self) -> Recorder:
        """Collects commands, paths and ``cd`` moves, and refuses what must not run."""

    @property
    def home(self) -> str | None:
        """The home directory ``~`` expands to, when known."""

    @property
    def cwd(self) -> str | None:
        """The directory the command line starts in, when known."""

    @property
    def max_depth(self) -> int:
        """Levels of re-parsed scripts accepted."""

    @property
    def call_stack(self) -> list[str]:
        """Names of the shell functions being walked, outermost first."""

    @property
    def max_work(self) -> int:
        """Bytes of script plus statements walked before a command is too large."""

    call_walks: int
    """Function bodies walked again with bound arguments so far."""
    work: int
    """Bytes of script plus statements walked so far (see :attr:`max_work`)."""
    backticks: int
    """Backquoted substitutions being re-parsed, innermost included."""
    definitions: int
    """Shell functions defined so far (any redefinition changes what a call reaches)."""
    function_calls: int
    """Calls of shell functions met so far, walked or not."""
    reuse: bool
    """Calls may repeat a function body's walk at its definition instead of walking it."""
    padded: bool
    """A body was checked from a deeper stack than its own (see ``_functions.define``)."""

    def text(self, frame: Frame, node: Node) -> str:
        """The source text of ``node``."""

    def sink(self) -> FrameSink:
        """A new sink for a word resolver; set its ``frame`` before resolving."""

    def expand_words(self, groups: Sequence[Sequence[Node]], frame: Frame) -> list[ResolvedWord]:
        """Resolve argument words."""

    def block(
        self, children: Sequence[Node], frame: Frame, ctx: StatementContext, bases: Bases
    ) -> BasesAfter:
        """A sequence of statements separated by ``;``, ``&`` or newlines."""

    def stmt(
        self,
        node: Node,
        frame: Frame,
        ctx: StatementContext,
        bases: Bases,
        tail: Sequence[Node] = (),
    ) -> BasesAfter:
        """Walk one statement; ``tail`` are redirects bash binds to its last command."""

    def descend(self, node: Node, frame: Frame) -> None:
        """Walk the statements, substitutions and expansions inside a non-statement node."""

    def resolve_redirects(self, nodes: Sequence[Node], frame: Frame, bases: Bases) -> list[Redir]:
        """Resolve and check file redirects."""

    def run(
        self, call: Call, *, prefix: Sequence[tuple[str | None, ResolvedWord]] = ()
    ) -> BasesAfter:
        """Judge one resolved command (and what it wraps), then record it."""

    def nested_substitution(self, text: str, frame: Frame, *, origin: str) -> None:
        """Commands of a substitution found as text (backquotes in a here-document)."""

    def script(
        self,
        word: ResolvedWord,
        frame: Frame,
        *,
        origin: str,
        positionals: tuple[str, ...] | None = None,
        same_shell: bool,
    ) -> BasesAfter:
        """Analyse a string that will be run as a shell script, one level deeper."""
