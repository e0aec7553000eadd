"""Redirects: file targets (checked and recorded), and what ends up on stdin
(a file, a here-document's text, a here-string) for shells and interpreters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from corral.shell.analysis._escaped import literal_chars, quote
from corral.shell.analysis._parser import Node
from corral.shell.analysis._paths import normalize
from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._state import Bases, Frame, Redir, Stdin
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord

__all__ = ["Gathered", "gather", "resolve", "stdin_of"]

_DYNAMIC_BODY = frozenset({"expansion", "simple_expansion", "command_substitution"})


@dataclass(slots=True)
class Gathered:
    """The redirects attached to one statement, in order."""

    files: list[Node] = field(default_factory=list)
    stdin_events: list[Stdin | Node] = field(default_factory=list)
    continuation: list[tuple[str, Node]] = field(default_factory=list)
    """Statements tree-sitter hangs under a here-document (``cat <<EOF | sh``)."""


_NOTHING = Gathered()
"""What a statement without redirects gathers (shared: only :func:`gather` fills one)."""


def gather(walker: Walking, frame: Frame, nodes: Sequence[Node]) -> Gathered:
    """Sort redirect nodes into file redirects, stdin sources and continuations."""
    if not nodes:
        return _NOTHING
    out = Gathered()
    for node in nodes:
        kind = node.type
        if kind == "file_redirect":
            _file(walker, frame, node, out)
        elif kind == "herestring_redirect":
            literal = node.named_children[-1] if node.named_children else None
            if literal is not None and literal.type != "file_descriptor":
                word = frame.resolver.word(literal)
                out.stdin_events.append(Stdin("herestring", text=word.value, word=word))
        elif kind == "heredoc_redirect":
            out.stdin_events.append(_heredoc(walker, frame, node, out))
    return out


def _file(walker: Walking, frame: Frame, node: Node, out: Gathered) -> None:
    out.files.append(node)
    descriptor = node.child_by_field_name("descriptor")
    fd = walker.text(frame, descriptor) if descriptor is not None else "0"
    operator = next((c.type for c in node.children if not c.is_named), "")
    if fd != "0":
        return
    if operator == "<":
        out.stdin_events.append(node)
    elif operator == "<&" and walker.text(frame, node).rstrip().endswith("-"):
        out.stdin_events.append(Stdin("closed"))


def _heredoc(walker: Walking, frame: Frame, node: Node, out: Gathered) -> Stdin:
    start = ""
    strip_tabs = False
    body: Node | None = None
    operator = ""
    for index, child in enumerate(node.children):
        kind = child.type
        field_name = node.field_name_for_child(index)
        if kind == "<<-":
            strip_tabs = True
        elif kind == "heredoc_start":
            start = walker.text(frame, child)
        elif kind == "heredoc_body":
            body = child
        elif kind == "file_redirect":
            _file(walker, frame, child, out)
        elif kind == "pipeline":
            out.continuation.extend(("|", c) for c in child.children if c.is_named)
        elif field_name == "operator":
            operator = kind
        elif field_name == "right":
            out.continuation.append((operator or "&&", child))
    word = ResolvedWord(start, quote(start))
    if body is None:
        return Stdin("heredoc", text="", word=word)
    text = walker.text(frame, body)
    dynamic = False
    if not any(ch in start for ch in "'\"\\"):
        dynamic = any(child.type in _DYNAMIC_BODY for child in body.named_children)
        frame.resolver.descend(body)
        if "`" in text:
            # tree-sitter leaves backquotes in a here-document body as text; bash runs them.
            for inner in _backquoted(text, start):
                walker.nested_substitution(inner, frame, origin=f"`{inner}`")
                dynamic = True
        if "\\" in text:
            text = _unescape(text)
    if strip_tabs:
        text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
    return Stdin("heredoc", text=None if dynamic else text, word=word)


def _backquoted(text: str, delimiter: str) -> list[str]:
    """The commands between backquotes in an unquoted here-document body."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c != "`":
            i += 1
            continue
        j = i + 1
        inner: list[str] = []
        while j < n and text[j] != "`":
            if text[j] == "\\" and j + 1 < n and text[j + 1] in "$`\\":
                inner.append(text[j + 1])
                j += 2
                continue
            inner.append(text[j])
            j += 1
        if j >= n:
            refuse(
                "parse_error",
                delimiter,
                "A backquote in the here-document is never closed; quote the delimiter "
                "(<<'EOF') so the body is taken literally.",
            )
        out.append("".join(inner))
        i = j + 1
    return out


def _unescape(text: str) -> str:
    """An unquoted here-document removes ``\\`` before ``$ ` \\`` and newline."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "$`\\\n":
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def resolve(walker: Walking, frame: Frame, nodes: Sequence[Node], bases: Bases) -> list[Redir]:
    """Resolve file redirects; refuse network, protected and device targets."""
    out: list[Redir] = []
    for node in nodes:
        if node.type != "file_redirect":
            continue
        fd: int | None = None
        operator = ""
        destination: Node | None = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "descriptor":
                text = walker.text(frame, child)
                fd = int(text) if text.isdigit() else None
            elif field_name == "destination":
                destination = destination or child
            elif not child.is_named:
                operator = child.type
        if destination is None:
            continue
        word = frame.resolver.word(destination)
        redir = Redir(operator, fd, word, _access(operator, word.value), node)
        if redir.access is not None:
            _check(walker, redir, bases)
        out.append(redir)
    return out


def _access(operator: str, value: str | None) -> Literal["read", "write"] | None:
    if operator in ("<&", ">&") and (value == "-" or (value or "").isdigit()):
        return None
    if operator in ("<", "<&"):
        return "read"
    return "write"


def _check(walker: Walking, redir: Redir, bases: Bases) -> None:
    word = redir.word
    literal = literal_chars(word.escaped)
    if normalize(literal).startswith(("/dev/tcp/", "/dev/udp/")) or literal.startswith(
        ("/dev/tcp/", "/dev/udp/")
    ):
        refuse(
            "network_redirect",
            word.text,
            "Redirecting to /dev/tcp or /dev/udp opens a raw network connection from the "
            "shell; use curl or another client for network access.",
        )
    walker.recorder.scan_word(word, bases)
    walker.recorder.check_device(word)


def stdin_of(gathered: Gathered, redirs: Sequence[Redir], default: Stdin) -> Stdin:
    """The last stdin source wins, as in bash."""
    if not gathered.stdin_events:
        return default
    last = gathered.stdin_events[-1]
    if isinstance(last, Stdin):
        return last
    for redir in redirs:
        if redir.node is not None and redir.node == last:
            return Stdin("file", word=redir.word)
    return Stdin("file")
