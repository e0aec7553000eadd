"""Bounded output buffers: the newest characters (tail/ring) and the first ones (head).

Memory stays within the limit plus one chunk whatever a command prints, so a firehose of
hundreds of megabytes costs no more than a quiet command.
"""

from __future__ import annotations

from collections import deque

__all__ = ["HeadBuffer", "TailBuffer", "trim_marker"]

_LINE_SEARCH = 400
"""How far into a cut tail we look for a line start, so the kept text starts on a line."""


def trim_marker(dropped: int, total: int, setting: str, limit: int) -> str:
    return (
        f"[… trimmed {dropped:,} of {total:,} characters of output (oldest dropped); "
        f"{setting} is {limit:,}]"
    )


class TailBuffer:
    """Keeps the newest ``limit`` characters of everything appended."""

    __slots__ = ("_chunks", "_size", "dropped", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._chunks: deque[str] = deque()
        self._size = 0
        self.total = 0
        self.dropped = 0

    def append(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        if len(text) >= self.limit:
            self.dropped += self._size + len(text) - self.limit
            self._chunks.clear()
            text = text[len(text) - self.limit :] if self.limit else ""
            self._chunks.append(text)
            self._size = len(text)
            return
        self._chunks.append(text)
        self._size += len(text)
        while self._size > self.limit:
            excess = self._size - self.limit
            first = self._chunks[0]
            if len(first) <= excess:
                self._chunks.popleft()
                self._size -= len(first)
                self.dropped += len(first)
            else:
                self._chunks[0] = first[excess:]
                self._size -= excess
                self.dropped += excess

    def text(self, *, whole_lines: bool = True) -> str:
        """The kept text; after a trim it starts at a line boundary when one is near."""
        kept = "".join(self._chunks)
        if self.dropped and whole_lines:
            newline = kept.find("\n", 0, _LINE_SEARCH)
            if newline >= 0:
                kept = kept[newline + 1 :]
        return kept

    def trimmed(self) -> int:
        """Characters not in :meth:`text` (dropped plus the cut partial line)."""
        return self.total - len(self.text())

    def __len__(self) -> int:
        return self._size


class HeadBuffer:
    """Keeps the first ``limit`` characters."""

    __slots__ = ("_parts", "_size", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._parts: list[str] = []
        self._size = 0

    def append(self, text: str) -> None:
        room = self.limit - self._size
        if room <= 0 or not text:
            return
        piece = text[:room]
        self._parts.append(piece)
        self._size += len(piece)

    def text(self) -> str:
        return "".join(self._parts)
