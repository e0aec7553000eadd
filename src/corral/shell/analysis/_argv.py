"""Argument words: nodes tree-sitter left side by side joined into one bash word,
``"$@"`` replaced by the bound positional words, brace expansion applied."""

from __future__ import annotations

from collections.abc import Sequence

from corral.shell.analysis._escaped import MARK, BraceOverflow, brace_expand, quote, unescape
from corral.shell.analysis._parser import Node
from corral.shell.analysis._state import Frame
from corral.shell.analysis._walking import Walking
from corral.shell.analysis._words import ResolvedWord, expand_tilde

__all__ = ["expand_words", "merged"]


def expand_words(
    walker: Walking, groups: Sequence[Sequence[Node]], frame: Frame
) -> list[ResolvedWord]:
    """Resolve argument words (each a group of touching nodes): ``"$@"`` splats,
    braces expand."""
    out: list[ResolvedWord] = []
    for group in groups:
        node = group[0]
        if len(group) == 1 and node.type in _SPLAT_TYPES:
            splat = _splat(walker, node, frame)
            if splat is not None:
                out.extend(splat)
                continue
        word = merged(walker, group, frame)
        if "{" in word.escaped and node.type in ("word", "concatenation", "brace_expression"):
            try:
                forms = brace_expand(word.escaped)
            except BraceOverflow:
                forms = [word.escaped]
            if len(forms) > 1:
                home = walker.home
                out.extend(
                    ResolvedWord(word.text, expand_tilde(f, home), word.procsub, word.split)
                    for f in forms
                )
                continue
        out.append(word)
    return out


def merged(walker: Walking, group: Sequence[Node], frame: Frame) -> ResolvedWord:
    """One bash word from nodes tree-sitter left side by side (``$"…"`` becomes a
    bare ``$`` and a string; bash reads one translated string)."""
    if len(group) == 1 and group[0].is_named:
        return frame.resolver.word(group[0])
    parts: list[str] = []
    split = procsub = False
    for index, node in enumerate(group):
        if not node.is_named:
            text = walker.text(frame, node)
            following = group[index + 1] if index + 1 < len(group) else None
            if text == "$" and following is not None and following.type == "string":
                continue
            parts.append(quote(text))
            continue
        word = frame.resolver.word(node, tilde=index == 0)
        parts.append(word.escaped)
        split = split or word.split
        procsub = procsub or word.procsub
    text = frame.src[group[0].start_byte : group[-1].end_byte].decode("utf-8", "replace")
    return ResolvedWord(text, "".join(parts), procsub and len(group) == 1, split)


_SPLAT_TYPES = frozenset({"string", "simple_expansion"})
"""The only node types :func:`_splat` can take (each named): a word of another type is
never ``"$@"``, and most words are plain ``word`` nodes."""


def _splat(walker: Walking, node: Node, frame: Frame) -> list[ResolvedWord] | None:
    """``"$@"``/``$*`` as a whole word: the bound positional words."""
    raw = frame.src[node.start_byte : node.end_byte]
    if b"$@" not in raw and b"$*" not in raw:
        return None
    target, quoted = node, False
    if node.type == "string":
        inner = [c for c in node.children if c.type != '"']
        if len(inner) != 1:
            return None
        target, quoted = inner[0], True
    if target.type != "simple_expansion" or walker.text(frame, target) not in ("$@", "$*"):
        return None
    text = walker.text(frame, node)
    values = frame.resolver.positional_words()
    if values is None:
        return [ResolvedWord(text, MARK, split=not quoted)]
    if walker.text(frame, target) == "$*" and quoted:
        plain = [unescape(v) for v in values]
        if any(p is None for p in plain):
            return [ResolvedWord(text, MARK)]
        return [ResolvedWord(text, quote(" ".join(p or "" for p in plain)))]
    words = []
    for value in values:
        plain_value = unescape(value)
        if not quoted and (plain_value is None or any(c in plain_value for c in " \t\n*?[")):
            return [ResolvedWord(text, MARK, split=True)]
        words.append(ResolvedWord(text, value))
    return words
