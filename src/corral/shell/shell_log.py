"""A background shell's output log: JSON lines, one row per captured chunk.

Rows are ``{"seq": n, "t": seconds since start, "stream": "stdout"|"stderr", "text": …}``.
The log is written as output arrives, so a reader sees it grow; a byte cap bounds it, and
the row that would cross the cap is replaced by one ``"stream": "meta"`` row saying so.
Reading returns rows after a sequence number, or the head and tail within a budget without
reading a large log whole.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.files import open_for_append

__all__ = ["LogExcerpt", "ShellLog", "excerpt", "read_rows"]


class ShellLog:
    """Appends rows to one shell's JSONL file."""

    def __init__(self, root: Path, path: Path, *, cap_bytes: int) -> None:
        """A log at ``path``, opened from ``root`` without following a link on the way."""
        self.path = path
        self._handle = open_for_append(root, path, mode=0o600, folder_mode=0o700)
        self._cap = cap_bytes
        self._written = 0
        self._seq = 0
        self._started = time.monotonic()
        self.capped = False

    def write(self, stream: str, text: str) -> None:
        if self.capped or self._handle.closed:
            return
        row = self._row(stream, text)
        if self._written + len(row) > self._cap:
            self.capped = True
            row = self._row(
                "meta",
                f"[log cap of {self._cap:,} bytes reached (live setting background_shell_log_cap);"
                " later output is only in the ring buffer and the completion report]",
            )
        self._handle.write(row)
        self._written += len(row)

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()

    def _row(self, stream: str, text: str) -> bytes:
        self._seq += 1
        elapsed = round(time.monotonic() - self._started, 3)
        record = {"seq": self._seq, "t": elapsed, "stream": stream, "text": text}
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def read_rows(path: Path, *, after: int = 0, limit: int = 500) -> list[dict[str, Any]]:
    """Rows with ``seq`` greater than ``after``, at most ``limit`` of them."""
    rows: list[dict[str, Any]] = []
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return rows
    with handle:
        for line in handle:
            row = _parse(line)
            if row is None or int(row.get("seq", 0)) <= after:
                continue
            rows.append(row)
            if len(rows) >= limit:
                break
    return rows


@dataclass(frozen=True, slots=True)
class LogExcerpt:
    head: str
    tail: str
    total: int | None
    """Characters in the whole log when it was read whole, else None."""


def excerpt(path: Path, *, budget: int) -> LogExcerpt:
    """The first and last ``budget // 2`` characters of a log, reading only its ends."""
    half = max(1, budget // 2)
    try:
        size = os.path.getsize(path)
        handle = open(path, "rb")
    except OSError:
        return LogExcerpt("", "", 0)
    with handle:
        head_parts: list[str] = []
        got = 0
        for line in handle:
            row = _parse(line)
            if row is not None and row.get("stream") != "meta":
                head_parts.append(str(row.get("text", "")))
                got += len(head_parts[-1])
            if got >= half:
                break
        window = half * 8 + 4096
        if size <= window:
            handle.seek(0)
            texts = [
                str(r.get("text", ""))
                for r in (_parse(line) for line in handle)
                if r is not None and r.get("stream") != "meta"
            ]
            whole = "".join(texts)
            return LogExcerpt(whole[:half], whole[-half:], len(whole))
        handle.seek(size - window)
        handle.readline()  # skip the partial row
        tail_texts = [
            str(r.get("text", ""))
            for r in (_parse(line) for line in handle)
            if r is not None and r.get("stream") != "meta"
        ]
    return LogExcerpt("".join(head_parts)[:half], "".join(tail_texts)[-half:], None)
