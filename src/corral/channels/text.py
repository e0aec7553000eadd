"""Outbound text: Telegram MarkdownV2 escaping and splitting at a vendor's length limit."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["escape_markdown_v2", "split_text"]

_MARKDOWN_V2_SPECIAL = frozenset("_*[]()~`>#+-=|{}.!\\")


def escape_markdown_v2(text: str) -> str:
    """``text`` shown literally under Telegram's MarkdownV2 parse mode."""
    return "".join("\\" + c if c in _MARKDOWN_V2_SPECIAL else c for c in text)


def split_text(text: str, limit: int, *, encode: Callable[[str], str] = lambda s: s) -> list[str]:
    """``text`` in pieces whose encoded form is at most ``limit`` characters.

    A piece breaks after the last newline (else space) in its second half when there is
    one, so lines and words stay whole where they can; an escape is never cut in two.
    """
    if limit < 2:
        raise ValueError(f"a split limit must be at least 2, not {limit}")
    pieces: list[str] = []
    rest = text
    while rest:
        size, taken = 0, 0
        for char in rest:
            width = len(encode(char))
            if size + width > limit:
                break
            size += width
            taken += 1
        if taken == len(rest):
            pieces.append(rest)
            break
        cut = taken
        for mark in ("\n", " "):
            at = rest.rfind(mark, taken // 2, taken)
            if at > 0:
                cut = at + 1
                break
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return [encode(p) for p in pieces] or [""]
