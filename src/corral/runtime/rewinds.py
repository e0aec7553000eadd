"""Conversation rewinds as timeline cards, and the overlay that hides what they rewound.

A rewind to a tool call hides, from the model, the model turn that made the call and every
row after it up to the rewind: the history the model gets ends before that turn, so no call
is left without its result. Stored rows never change: the card

``{"card": "rewind", "id", "call_id", "from_seq", "through_seq", "by", ...}``

says which rows (``from_seq`` to ``through_seq``) are rewound; the timeline keeps showing
them, marked by :func:`rewound_seqs`. Rows after the card reach the model again.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from corral.errors import UsageError
from corral.runtime.prompt import PromptView
from corral.runtime.timeline import PROMPT_KINDS, TimelineRow

__all__ = [
    "CARD",
    "REWIND_HOLDER",
    "HiddenRow",
    "RewindOverlay",
    "holder_for",
    "rewind_span",
    "rewound_ranges",
    "rewound_seqs",
]

CARD = "rewind"

REWIND_HOLDER = "rewind:"
"""A rewind holds its conversation (``active_run_id``) as this prefix and its worker id, so
no run starts meanwhile; recovery frees it when that process is gone."""
_HOLDER_MAX = 64


def holder_for(worker: str) -> str:
    """The ``active_run_id`` a rewind made by ``worker`` holds its conversation under."""
    holder = REWIND_HOLDER + worker
    if len(holder) > _HOLDER_MAX:  # the column's width: keep it unparsable, never freed
        return REWIND_HOLDER + "?" + secrets.token_hex(8)
    return holder


@dataclass(frozen=True, slots=True, kw_only=True)
class HiddenRow:
    """A row a conversation rewind hides from the model."""

    seq: int
    kind: str
    call_id: str | None = None
    tool: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "call_id": self.call_id, "tool": self.tool}


def _ranges(rows: Iterable[TimelineRow]) -> list[tuple[int, int]]:
    return [
        (int(row.data["from_seq"]), int(row.data["through_seq"]))
        for row in rows
        if row.kind == "card" and row.data.get("card") == CARD
    ]


def rewound_ranges(rows: Iterable[TimelineRow]) -> list[tuple[int, int]]:
    """The (first, last) sequence numbers each rewind card of ``rows`` hides."""
    return _ranges(rows)


def rewound_seqs(rows: Sequence[TimelineRow]) -> set[int]:
    """Sequence numbers of ``rows`` a rewind hides from the model (shown as rewound)."""
    ranges = _ranges(rows)
    return {row.seq for row in rows if any(a <= row.seq <= b for a, b in ranges)}


def rewind_span(rows: Sequence[TimelineRow], call_id: str) -> tuple[int, list[HiddenRow]]:
    """The first sequence number a rewind to ``call_id`` hides (the model turn that made
    the call) and the prompt rows it hides, among the conversation's ``rows``."""
    position = next(
        (i for i, row in enumerate(rows) if row.kind == "tool_call" and row.call_id == call_id),
        None,
    )
    if position is None:
        raise UsageError(f"no tool call {call_id!r} in this conversation")
    start = position
    while start > 0 and rows[start].kind != "model_turn":
        start -= 1
    if rows[start].kind != "model_turn":
        start = position
    first = rows[start].seq
    hidden = [
        HiddenRow(
            seq=row.seq,
            kind=row.kind,
            call_id=row.call_id,
            tool=str(row.data.get("tool")) if row.data.get("tool") else None,
        )
        for row in rows[start:]
        if row.kind in PROMPT_KINDS
    ]
    return first, hidden


class _Index:
    __slots__ = ("ranges", "scanned", "source")

    def __init__(self, source: Sequence[TimelineRow]) -> None:
        self.source = source
        self.scanned = 0
        self.ranges: list[tuple[int, int]] = []

    def update(self) -> None:
        self.ranges += _ranges(self.source[self.scanned :])
        self.scanned = len(self.source)


class RewindOverlay:
    """The prompt overlay leaving out every row a rewind card hides.

    It keeps the cards found per conversation (the most recently used ones), scanning only
    the rows appended since the last step; a conversation never rewound gets its rows
    back unchanged."""

    def __init__(self, *, capacity: int = 64) -> None:
        self._indexes: OrderedDict[str, _Index] = OrderedDict()
        self._capacity = capacity

    def _index(self, conversation_id: str, rows: Sequence[TimelineRow]) -> _Index:
        index = self._indexes.get(conversation_id)
        if index is None or index.source is not rows or index.scanned > len(rows):
            index = _Index(rows)
            self._indexes[conversation_id] = index
            while len(self._indexes) > self._capacity:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(conversation_id)
        index.update()
        return index

    def ranges(self, view: PromptView) -> list[tuple[int, int]]:
        """The (first, last) sequence numbers rewinds hide in the conversation of ``view``."""
        return self._index(view.conversation_id, view.rows).ranges

    def __call__(self, rows: Sequence[TimelineRow], view: PromptView) -> Sequence[TimelineRow]:
        ranges = self._index(view.conversation_id, view.rows).ranges
        if not ranges:
            return rows
        return [row for row in rows if not any(a <= row.seq <= b for a, b in ranges)]
