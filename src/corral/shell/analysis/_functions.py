"""Shell functions: bodies are checked where defined and walked again at each call with
``$1…`` bound to the call's words; a function that spawns itself is a fork bomb."""

from __future__ import annotations

from corral.shell.analysis._escaped import MARK
from corral.shell.analysis._parser import Node
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import (
    Bases,
    BasesAfter,
    Call,
    Frame,
    FunctionInfo,
    StatementContext,
)
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import WordResolver

__all__ = ["MAX_CALL_WALKS", "call", "check_fork_bombs", "define"]

MAX_CALL_WALKS = 64
"""Calls walked with bound arguments; later calls reuse the definition's findings."""


def define(walker: Walking, node: Node, frame: Frame, bases: Bases) -> None:
    """Register a function and check its body with unknown arguments."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return
    name = walker.text(frame, name_node)
    info = FunctionInfo(name=name, body=body, frame=frame)
    frame.functions[name] = info
    recorder = walker.recorder
    saved = (recorder.commands, recorder.paths)
    recorder.commands, recorder.paths = info.commands, info.paths
    try:
        walker.stmt(body, frame, StatementContext(function=name), bases)
    finally:
        recorder.commands, recorder.paths = saved
    redirect = node.child_by_field_name("redirect")
    if redirect is not None:
        recorder.record_redirects(walker.resolve_redirects([redirect], frame, bases), "", bases)


def call(walker: Walking, info: FunctionInfo, site: Call) -> BasesAfter:
    """Walk a function body again with its positional parameters bound to the call."""
    bases = site.bases
    if info.name in walker.call_stack or walker.call_walks >= MAX_CALL_WALKS:
        if not info.replayed:
            info.replayed = True
            walker.recorder.commands.extend(info.commands)
            walker.recorder.paths.extend(info.paths)
        return (bases, bases)
    walker.call_walks += 1
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
        ctx = StatementContext(
            stdin=site.ctx.stdin,
            subshell=site.ctx.subshell,
            spawning=site.ctx.spawning,
            function=info.name,
        )
        return walker.stmt(info.body, frame, ctx, bases)
    finally:
        walker.call_stack.pop()


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
