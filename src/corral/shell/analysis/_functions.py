"""Shell functions: bodies are checked where defined and walked again at each call with
``$1…`` bound to the call's words; a function that spawns itself is a fork bomb.

A call that would walk the body with nothing new (the body never reads ``$1…``, the call
starts where the definition's check started and nothing the walk reads has changed since)
repeats what that check found instead of walking it again.
"""

from __future__ import annotations

import sys
from types import FrameType

from corral.shell.analysis._escaped import MARK
from corral.shell.analysis._parser import Node
from corral.shell.analysis._pycode import strict_recursion
from corral.shell.analysis._records import Recorder
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import (
    Bases,
    BasesAfter,
    BodyWalk,
    Call,
    Frame,
    FunctionInfo,
    StatementContext,
)
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import WordResolver

__all__ = ["MAX_CALL_WALKS", "STACK_PAD", "call", "check_fork_bombs", "define"]

MAX_CALL_WALKS = 64
"""Calls walked with bound arguments; later calls reuse the definition's findings."""
STACK_PAD = 32
"""Extra stack frames a reusable body is checked under (see :func:`define`)."""


HOOK_FUNCTIONS = frozenset({"command_not_found_handle", "command_not_found_handler"})
"""Functions bash (and zsh) call by name, not where the command line calls them."""


def define(walker: Walking, node: Node, frame: Frame, bases: Bases) -> None:
    """Register a function and check its body with unknown arguments."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return
    name = walker.text(frame, name_node)
    if name in HOOK_FUNCTIONS and walker.recorder.unconfined:
        refuse(
            "shell_hijack",
            name,
            f"bash calls a function named {name!r} by itself (when a command is not found), "
            "out of the analysis' sight, and without the sandbox that runs on the host; give "
            "the function another name.",
        )
    info = FunctionInfo(name=name, body=body, frame=frame)
    frame.functions[name] = info
    walker.definitions += 1
    recorder = walker.recorder
    resolver = frame.resolver
    reusable = walker.reuse and not resolver.bound and resolver.pwd_as_dot
    start = _Start(walker, frame)
    ctx = StatementContext(function=name)
    saved = (recorder.commands, recorder.paths)
    recorder.commands, recorder.paths = info.commands, info.paths
    try:
        if reusable:
            # Checked STACK_PAD frames deeper than needed, so that a call from up to that
            # much deeper is known not to exceed the recursion limit either.
            walker.padded = True
            with strict_recursion():
                flow = _padded(STACK_PAD, walker, body, frame, ctx, bases)
        else:
            flow = walker.stmt(body, frame, ctx, bases)
    finally:
        recorder.commands, recorder.paths = saved
    if reusable:
        info.walk = start.finish(walker, frame, bases, flow, info)
    redirect = node.child_by_field_name("redirect")
    if redirect is not None:
        recorder.record_redirects(walker.resolve_redirects([redirect], frame, bases), "", bases)


def _padded(
    pad: int, walker: Walking, body: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    if pad:
        return _padded(pad - 1, walker, body, frame, ctx, bases)
    return walker.stmt(body, frame, ctx, bases)


def call(walker: Walking, info: FunctionInfo, site: Call) -> BasesAfter:
    """Walk a function body again with its positional parameters bound to the call."""
    bases = site.bases
    walker.function_calls += 1
    if info.name in walker.call_stack or walker.call_walks >= MAX_CALL_WALKS:
        if not info.replayed:
            info.replayed = True
            walker.recorder.commands.extend(info.commands)
            walker.recorder.paths.extend(info.paths)
        return (bases, bases)
    walker.call_walks += 1
    ctx = StatementContext(
        stdin=site.ctx.stdin,
        subshell=site.ctx.subshell,
        spawning=site.ctx.spawning,
        function=info.name,
    )
    walk = info.walk
    if walk is not None and _same_start(walker, walk, ctx, bases):
        return _repeat(walker, info, walk)
    walker.call_stack.append(info.name)
    try:
        sink = walker.sink()
        positionals = (MARK, *(w.escaped for w in site.argv[1:]))
        resolver = WordResolver(info.frame.src, sink, home=walker.home, positionals=positionals)
        frame = Frame(
            src=info.frame.src,
            resolver=resolver,
            functions=info.frame.functions,
            depth=info.frame.depth,
            ctx=site.ctx,
            bases=bases,
        )
        sink.frame = frame
        return walker.stmt(info.body, frame, ctx, bases)
    finally:
        walker.call_stack.pop()


class _Start:
    """The walker's state where a function body's check starts."""

    __slots__ = (
        "calls",
        "consumed",
        "definitions",
        "looked",
        "moves",
        "output",
        "output_sets",
        "pids",
        "reads",
        "work",
        "writes",
    )

    def __init__(self, walker: Walking, frame: Frame) -> None:
        recorder = walker.recorder
        self.writes = len(recorder.writes)
        self.consumed = len(recorder.consumed_writes)
        self.pids = _pids(recorder)
        self.output = recorder.last_output
        self.looked = tuple(recorder.looked_back)
        self.output_sets = recorder.output_sets
        self.moves = len(recorder.cd_moves)
        self.work = walker.work
        self.definitions = walker.definitions
        self.calls = walker.function_calls
        self.reads = frame.resolver.positional_reads

    def finish(
        self, walker: Walking, frame: Frame, bases: Bases, flow: BasesAfter, info: FunctionInfo
    ) -> BodyWalk | None:
        """What the finished walk did, when a call may repeat it (see :class:`BodyWalk`)."""
        recorder = walker.recorder
        looked = zip(recorder.looked_back, self.looked, strict=True)
        w, c, p, o = (now - then for now, then in looked)
        if (
            walker.definitions != self.definitions
            or walker.function_calls != self.calls
            or frame.resolver.positional_reads != self.reads
        ):
            return None
        writes = recorder.writes[self.writes :]
        consumed = recorder.consumed_writes[self.consumed :]
        pids = _pids(recorder)
        return BodyWalk(
            bases=bases,
            flow=flow,
            writes=tuple(writes),
            consumed=tuple(consumed),
            not_own=pids[1] - self.pids[1],
            output=recorder.last_output,
            output_set=recorder.output_sets != self.output_sets,
            looked=(w, c, p, o),
            writes_at=self.writes if w else None,
            consumed_at=self.consumed if c else None,
            pids_at=self.pids if p else None,
            output_at=(self.output,) if o else None,
            cd_moves=tuple(recorder.cd_moves[self.moves :]),
            calls=tuple(info.calls),
            work=walker.work - self.work,
            backticks=walker.backticks,
            definitions=self.definitions,
            stack=_stack_depth(),
        )


def _pids(recorder: Recorder) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(recorder.own_pids), frozenset(recorder.not_own)


def _stack_depth() -> int:
    depth = 0
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def _same_start(walker: Walking, walk: BodyWalk, ctx: StatementContext, bases: Bases) -> bool:
    """A walk of the body from here would be the definition's walk again, step for step:
    same context and ``cd`` locations, same functions and counters, and whatever it read
    back from the recorder unchanged."""
    recorder = walker.recorder
    return (
        ctx.stdin == _PLAIN.stdin
        and not ctx.subshell
        and not ctx.spawning
        and bases == walk.bases
        and walker.definitions == walk.definitions
        and walker.backticks == walk.backticks
        and walker.work + walk.work <= walker.max_work
        and walk.writes_at in (None, len(recorder.writes))
        and walk.consumed_at in (None, len(recorder.consumed_writes))
        and (walk.pids_at is None or walk.pids_at == _pids(recorder))
        and (walk.output_at is None or walk.output_at == (recorder.last_output,))
        and _stack_depth() <= walk.stack + STACK_PAD
    )


def _repeat(walker: Walking, info: FunctionInfo, walk: BodyWalk) -> BasesAfter:
    """Record what walking the body again would record, in the same order."""
    recorder = walker.recorder
    walker.work += walk.work
    recorder.commands.extend(info.commands)
    recorder.paths.extend(info.paths)
    recorder.cd_moves.extend(walk.cd_moves)
    recorder.writes.extend(walk.writes)
    recorder.consumed_writes.extend(walk.consumed)
    # Without a look back the walk only ever marked variables as not its own.
    recorder.own_pids -= walk.not_own
    recorder.not_own |= walk.not_own
    if walk.output_set:
        recorder.last_output = walk.output
        recorder.output_sets += 1
    for part, count in enumerate(walk.looked):
        recorder.looked_back[part] += count
    info.calls.extend(walk.calls)
    return walk.flow


_PLAIN = StatementContext()


def check_fork_bombs(functions: dict[str, FunctionInfo]) -> None:
    """Refuse a function that starts (directly or through others) copies of itself in a
    pipeline or in the background."""
    for info in functions.values():
        for callee, spawning in info.calls:
            if spawning and _reaches(callee, info.name, functions):
                refuse(
                    "fork_bomb",
                    info.name,
                    f"Function {info.name!r} starts copies of itself in the background or in "
                    "a pipeline without end (a fork bomb); this is never allowed.",
                )


def _reaches(start: str, goal: str, functions: dict[str, FunctionInfo]) -> bool:
    seen: set[str] = set()
    pending = [start]
    while pending:
        name = pending.pop()
        if name == goal:
            return True
        if name in seen or name not in functions:
            continue
        seen.add(name)
        pending.extend(callee for callee, _ in functions[name].calls)
    return False
