"""One conversation's compactions, indexed by the rows they replace.

The index follows the conversation's cached rows (the prompt builder's history list, which
only grows): each build scans just the rows added since the last one, picking up compaction
cards and "Show full" toggles, and remembers the largest prompt items for the context map.
When a compaction appears or is switched, the replacement rows are worked out once (each
trimmed row object is memoised, so the history reuses its message from one build to the
next); applying the overlay is then one list copy plus one assignment per trimmed row.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from corral.runtime.compaction.cards import CARD, TOGGLE, Compaction
from corral.runtime.compaction.trims import summary_row, trim_row
from corral.runtime.timeline import TimelineRow

__all__ = ["LARGE_CHARS", "ConversationIndex", "LargeItem"]

LARGE_CHARS = 4_000
"""Prompt items of at least this many characters (about 1,000 tokens) go on the map."""

PROTECTED_TOOLS: frozenset[str] = frozenset({"compact_history"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LargeItem:
    seq: int
    handle: str
    """How compact_history names it: ``tool_use_id X`` or ``sequence N``."""
    label: str
    tokens: int
    """Estimated (characters / 4): the map is a guide; cards count with the tokenizer."""


def _seq(row: TimelineRow) -> int:
    return row.seq


def _position(rows: Sequence[TimelineRow], seq: int) -> int | None:
    if rows:
        guess = seq - rows[0].seq
        if 0 <= guess < len(rows) and rows[guess].seq == seq:
            return guess
    found = bisect_left(rows, seq, key=_seq)
    return found if found < len(rows) and rows[found].seq == seq else None


def _size(row: TimelineRow) -> int:
    data = row.data
    if row.kind == "tool_result":
        result = data.get("result")
        if not isinstance(result, dict):
            return 0
        return sum(
            len(str(b.get("text", "")))
            for b in result.get("content") or ()
            if isinstance(b, dict) and b.get("type") == "text"
        )
    if row.kind in ("user_message", "model_turn", "background_report", "message"):
        return len(str(data.get("text", "")))
    return 0


class ConversationIndex:
    def __init__(self, source: Sequence[TimelineRow]) -> None:
        self.source = source
        """The list of rows this index follows (identity: a new list means a new index)."""
        self._scanned = 0
        self.compactions: dict[str, Compaction] = {}
        self._applied: dict[str, bool] = {}
        self._dirty = False
        self._made: dict[tuple[str, int], TimelineRow] = {}
        self._summaries: dict[str, TimelineRow] = {}
        self.replacements: dict[int, TimelineRow] = {}
        self.summary: tuple[int, int, TimelineRow] | None = None
        self._large: dict[int, LargeItem] = {}

    def applied(self, compaction_id: str) -> bool:
        return self._applied.get(compaction_id, False)

    def update(self) -> None:
        """Take in the rows added since the last call; rework replacements if needed."""
        rows = self.source
        for index in range(self._scanned, len(rows)):
            row = rows[index]
            if row.kind == "card":
                self._card(row)
            elif row.kind != "tool_call":
                size = _size(row)
                if size >= LARGE_CHARS:
                    self._remember(row, size)
        self._scanned = len(rows)
        if self._dirty:
            self._rebuild()

    def _card(self, row: TimelineRow) -> None:
        kind = row.data.get("card")
        if kind == CARD:
            compaction = Compaction.from_card(row.data, card_seq=row.seq)
            self.compactions[compaction.id] = compaction
            self._applied[compaction.id] = compaction.applied
            self._dirty = True
        elif kind == TOGGLE:
            compaction_id = str(row.data.get("id", ""))
            if compaction_id in self.compactions:
                self._applied[compaction_id] = bool(row.data.get("applied"))
                self._dirty = True

    def _remember(self, row: TimelineRow, size: int) -> None:
        if row.kind == "tool_result":
            tool = str(row.data.get("tool", ""))
            if tool in PROTECTED_TOOLS or not row.call_id:
                return
            handle, label = f"tool_use_id {row.call_id}", f"{tool} output"
        else:
            handle, label = f"sequence {row.seq}", row.kind.replace("_", " ")
        self._large[row.seq] = LargeItem(seq=row.seq, handle=handle, label=label, tokens=size // 4)

    def _row(self, seq: int) -> TimelineRow | None:
        found = _position(self.source, seq)
        return self.source[found] if found is not None else None

    def _rebuild(self) -> None:
        replacements: dict[int, TimelineRow] = {}
        summary: Compaction | None = None
        for compaction in self.compactions.values():  # oldest first: newer trims win
            if not self._applied[compaction.id]:
                continue
            if compaction.source == "summarize":
                if summary is None or compaction.last_seq >= summary.last_seq:
                    summary = compaction
                continue
            for position, target in enumerate(compaction.targets):
                key = (compaction.id, target.seq)
                made = self._made.get(key)
                if made is None:
                    original = self._row(target.seq)
                    if original is None:
                        continue
                    made = self._made[key] = trim_row(original, compaction, position)
                replacements[target.seq] = made
        self.replacements = replacements
        if summary is None:
            self.summary = None
        else:
            row = self._summaries.get(summary.id)
            if row is None:
                row = self._summaries[summary.id] = summary_row(summary)
            self.summary = (summary.first_seq, summary.last_seq, row)
        self._dirty = False

    def hidden(self, seq: int) -> bool:
        """Whether the overlay trims or summarises row ``seq`` now."""
        if seq in self.replacements:
            return True
        return self.summary is not None and self.summary[0] <= seq <= self.summary[1]

    def large_items(self, limit: int) -> list[LargeItem]:
        """The largest prompt items the overlay leaves as they are, largest first."""
        shown = [item for item in self._large.values() if not self.hidden(item.seq)]
        shown.sort(key=lambda item: (-item.tokens, item.seq))
        return shown[:limit]

    def apply(self, rows: Sequence[TimelineRow]) -> Sequence[TimelineRow]:
        """``rows`` as the model sees them: trimmed rows replaced, a summary range folded."""
        if not self.replacements and self.summary is None:
            return rows
        out = list(rows)
        for seq, made in self.replacements.items():
            found = _position(out, seq)
            if found is not None:
                out[found] = made
        if self.summary is not None:
            first, last, row = self.summary
            start, end = bisect_left(out, first, key=_seq), bisect_right(out, last, key=_seq)
            if start < end:
                out[start:end] = [row]
        return out
