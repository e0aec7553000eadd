"""Text as numbered lines: a window of lines, a character budget, and a marker for the cut.

Lines are numbered like ``cat -n`` (number, tab, text) so the model can quote them back to
fs_edit without the prefix. A window never holds more than ``budget`` characters; a line
longer than :data:`LINE_CAP` is cut with a marker. Whatever is left out is named in one
line saying how to read on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LINE_CAP", "READ_BUDGET", "Window", "number_lines"]

LINE_CAP = 2_000
"""Characters of one line shown; the rest of a longer line is cut with a marker."""
READ_BUDGET = 60_000
"""Characters of numbered text one read returns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    text: str
    first: int
    """First line number shown (0 when none is)."""
    last: int
    """Last line number shown (0 when none is)."""
    total: int
    """Lines in the whole text."""
    cut_lines: int
    """Lines shown only in part because they were longer than LINE_CAP."""
    budget_hit: bool

    @property
    def complete(self) -> bool:
        return self.first <= 1 and self.last == self.total and not self.cut_lines

    def marker(self) -> str | None:
        """One line naming what this window left out and how to read on, or None."""
        notes: list[str] = []
        if self.total == 0:
            return "[the file is empty]"
        if self.first == 0:
            return (
                f"[no lines shown: offset is past the end; the text has {self.total:,} lines, "
                "call again with a smaller offset]"
            )
        if self.last < self.total:
            why = "the character budget was reached" if self.budget_hit else "limit was reached"
            notes.append(
                f"showing lines {self.first:,}-{self.last:,} of {self.total:,} ({why}); call "
                f"again with offset={self.last + 1} to read on"
            )
        elif self.first > 1:
            notes.append(f"showing lines {self.first:,}-{self.last:,} of {self.total:,}")
        if self.cut_lines:
            notes.append(
                f"{self.cut_lines:,} line(s) longer than {LINE_CAP:,} characters were cut "
                "where marked"
            )
        return "[" + "; ".join(notes) + "]" if notes else None


def number_lines(
    lines: Iterable[str], *, offset: int, limit: int, budget: int = READ_BUDGET
) -> Window:
    """Numbered lines ``offset`` to ``offset + limit - 1`` of ``lines`` within ``budget``.

    ``lines`` is consumed to the end, so the window knows the total line count.
    """
    shown: list[str] = []
    used = 0
    first = last = total = cut = 0
    full = False
    end = offset + limit
    for number, raw in enumerate(lines, 1):
        total = number
        if number < offset or number >= end or full:
            continue
        line = raw.rstrip("\n").rstrip("\r")
        if len(line) > LINE_CAP:
            line = line[:LINE_CAP] + f" [… line cut: {len(line) - LINE_CAP:,} more characters]"
            cut += 1
        entry = f"{number:>6}\t{line}"
        if used + len(entry) + 1 > budget and shown:
            full = True
            continue
        shown.append(entry)
        used += len(entry) + 1
        first = first or number
        last = number
    return Window(
        text="\n".join(shown),
        first=first,
        last=last,
        total=total,
        cut_lines=cut,
        budget_hit=full,
    )
