"""Compound statements: ``if``, loops, ``case``, ``[[ … ]]`` and the endless-loop fork bomb.

Branches and loop bodies run from the locations the condition leaves; afterwards the
shell may stand where any branch ended, so every possible base is kept for the gate.
"""

from __future__ import annotations

import re

from corral.shell.analysis import _assign
from corral.shell.analysis._escaped import quote, unescape
from corral.shell.analysis._parser import Node, adjacent
from corral.shell.analysis._paths import split_tokens
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import (
    Bases,
    BasesAfter,
    Frame,
    StatementContext,
    merge,
    unknown_loc,
)
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord, expand_tilde

__all__ = ["c_for", "case", "for_", "if_", "test", "while_"]

_LOOP_FOREVER = frozenset({"true", ":"})


def if_(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    ends: list[Bases] = []
    condition: list[Node] = []
    body: list[Node] = []
    in_body = False
    outcome: BasesAfter = (bases, bases)
    for child in node.children:
        kind = child.type
        if kind == "then":
            outcome = walker.block(condition, frame, ctx, bases)
            in_body = True
            continue
        if kind in ("elif_clause", "else_clause", "fi"):
            if in_body:
                ends.append(merge(*walker.block(body, frame, ctx, outcome[0] or bases)))
                body, in_body = [], False
            if kind == "elif_clause":
                ok, fail = _elif(walker, child, frame, ctx, outcome[1] or bases)
                ends.append(ok)
                outcome = (outcome[0], fail)
            elif kind == "else_clause":
                ends.append(merge(*walker.block(child.children, frame, ctx, outcome[1] or bases)))
                outcome = (outcome[0], frozenset())
            continue
        (body if in_body else condition).append(child)
    ends.append(outcome[1])
    result = merge(*ends) or bases
    return (result, result)


def _elif(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    condition: list[Node] = []
    body: list[Node] = []
    target = condition
    for child in node.children:
        if child.type == "then":
            target = body
            continue
        target.append(child)
    ok, fail = walker.block(condition, frame, ctx, bases)
    return (merge(*walker.block(body, frame, ctx, ok or bases)), fail)


def _loop(
    walker: Walking, body: Node | None, frame: Frame, ctx: StatementContext, bases: Bases
) -> Bases:
    """Bases after a loop: a body that moves the shell may move it again and again."""
    if body is None:
        return bases
    ok, fail = walker.block(body.children, frame, ctx, bases)
    after = merge(ok, fail)
    if after != bases:
        after = merge(after, bases, frozenset({unknown_loc()}))
    return merge(bases, after)


def while_(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    condition = list(node.children_by_field_name("condition"))
    body = node.child_by_field_name("body")
    ok, _ = walker.block(condition, frame, ctx, bases)
    until = bool(node.children) and node.children[0].type == "until"
    named = [c for c in condition if c.is_named]
    if body is not None and len(named) == 1 and named[0].type == "command":
        name = named[0].child_by_field_name("name")
        text = walker.text(frame, name) if name is not None else ""
        if (until and text == "false") or (not until and text in _LOOP_FOREVER):
            _bomb_in_body(walker, body, frame, node)
    result = _loop(walker, body, frame, ctx, ok or bases)
    return (result, result)


_MAX_BOUND_ITEMS = 8
_CHANGES_VARIABLES = re.compile(
    r"\b(read|readarray|mapfile|printf|declare|typeset|local|export|getopts|let|eval|source"
    r"|unset|for|select|trap|alias)\b|\(\(|(^|[;&|\s(])\.\s"
)


def _bindable(walker: Walking, name: str, body: Node | None, frame: Frame) -> bool:
    """The loop variable keeps the item's value through the whole body: nothing in the
    body can assign it (no assignment, no builtin that sets variables, no function call)."""
    if body is None:
        return False
    text = walker.text(frame, body)
    own = re.compile(rf"\b{re.escape(name)}\s*(\[[^\]]*\])?\+?=|\$\{{{re.escape(name)}:?[=?]")
    if own.search(text) or _CHANGES_VARIABLES.search(text):
        return False
    # The substring test first: a regex per defined function made a script of many
    # functions and loops quadratic in regex searches.
    return not any(f in text and re.search(rf"\b{re.escape(f)}\b", text) for f in frame.functions)


def for_(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    variable = node.child_by_field_name("variable")
    name = walker.text(frame, variable) if variable is not None else None
    if name is not None:
        _assign.computed(walker, name, frame, f"for {name}")
    words = walker.expand_words(adjacent(node.children_by_field_name("value")), frame)
    for word in words:
        walker.recorder.scan_word(word, bases)
    body = node.child_by_field_name("body")
    static = all(word.value is not None and not word.split for word in words)
    # Only the unconfined gate needs the items: inside the sandbox "$f" may stay unknown.
    unconfined = walker.recorder.unconfined
    if not unconfined or name is None or not words or len(words) > _MAX_BOUND_ITEMS or not static:
        result = _loop(walker, body, frame, ctx, bases)
        return (result, result)
    if not _bindable(walker, name, body, frame):
        result = _loop(walker, body, frame, ctx, bases)
        return (result, result)
    resolver = frame.resolver
    ends: list[Bases] = []
    for word in words:
        resolver.bound[name] = word.escaped
        try:
            ends.append(_loop(walker, body, frame, ctx, bases))
        finally:
            resolver.bound.pop(name, None)
    result = merge(*ends)
    return (result, result)


def c_for(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    body = node.child_by_field_name("body")
    for child in node.named_children:
        if child != body:
            walker.descend(child, frame)
    if not node.children_by_field_name("condition") and body is not None:
        _bomb_in_body(walker, body, frame, node)
    result = _loop(walker, body, frame, ctx, bases)
    return (result, result)


def case(
    walker: Walking, node: Node, frame: Frame, ctx: StatementContext, bases: Bases
) -> BasesAfter:
    ends: list[Bases] = [bases]
    for child in node.children:
        if child.type == "case_item":
            statements: list[Node] = []
            for index, part in enumerate(child.children):
                if child.field_name_for_child(index) == "value":
                    walker.descend(part, frame)
                elif part.is_named:
                    statements.append(part)
            ends.append(merge(*walker.block(statements, frame, ctx, bases)))
        elif child.is_named and child.type != "comment":
            walker.expand_words([[child]], frame)
    result = merge(*ends)
    return (result, result)


def test(walker: Walking, node: Node, frame: Frame) -> None:
    """``[[ … ]]``/``[ … ]``: walk substitutions, and look for protected paths."""
    walker.descend(node, frame)
    raw = walker.text(frame, node).replace("${HOME}", "~").replace("$HOME", "~")
    for token in split_tokens(quote(raw)):
        value = unescape(token) or ""
        if value in ("[[", "]]", "[", "]") or value.startswith("-"):
            continue
        e = expand_tilde(token, walker.home) if value.startswith("~") else token
        walker.recorder.scan_word(ResolvedWord(value, e), frame.bases)


def _bomb_in_body(walker: Walking, body: Node, frame: Frame, node: Node) -> None:
    """An endless loop that starts background jobs and never waits."""
    kids = body.children
    backgrounded = False
    paced = False
    for index, child in enumerate(kids):
        if not child.is_named:
            continue
        if index + 1 < len(kids) and kids[index + 1].type == "&":
            backgrounded = True
        elif child.type == "command":
            name = child.child_by_field_name("name")
            if name is not None and walker.text(frame, name) in ("wait", "sleep"):
                paced = True
    if backgrounded and not paced:
        refuse(
            "fork_bomb",
            walker.text(frame, node).split("\n", 1)[0][:60],
            "An endless loop starts background jobs without waiting (a fork bomb); bound the "
            "loop or wait for each job.",
        )
