"""Control and invisible characters: refused anywhere in a command.

They either change how bash splits the line (CR, NUL) or make what a person reviews differ
from what runs (zero-width characters, bidi overrides, look-alike spaces).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["describe_character", "find_forbidden_character"]

# C0 controls except TAB and LF, plus DEL.
_ASCII_BAD = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Categories refused outside ASCII: controls (C1), format (zero-width, bidi, BOM, soft
# hyphen…), unassigned, private use, surrogates, line/paragraph separators, and every
# space that is not the ASCII space.
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp", "Zs"})


def find_forbidden_character(text: str) -> int | None:
    """Index of the first forbidden character in ``text``, or ``None``."""
    match = _ASCII_BAD.search(text)
    first = match.start() if match else None
    if text.isascii():
        return first
    category = unicodedata.category
    limit = len(text) if first is None else first
    for index in range(limit):
        char = text[index]
        if char >= "\x80" and category(char) in _BAD_CATEGORIES:
            return index
    return first


def describe_character(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``-style name of a character."""
    name = unicodedata.name(char, "")
    code = f"U+{ord(char):04X}"
    return f"{code} {name}" if name else code
