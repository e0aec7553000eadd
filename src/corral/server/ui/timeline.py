"""A conversation's timeline as the page shows it: items in order, one card per tool call.

A tool call's rows (the call, the waiting card, the decision, the result) fold into one
:class:`CallCard`; compaction toggles fold into their compaction. The same fold serves the
first render and the live stream: :meth:`TimelineView.add` says whether a row makes a new
item (appended) or changes one already on the page (replaced by its element id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from corral.runtime.rewinds import rewound_ranges
from corral.runtime.timeline import TimelineRow

__all__ = ["CallCard", "Change", "CompactionCard", "Item", "TimelineView"]


@dataclass(frozen=True, slots=True)
class HookLine:
    """One hook's part in a call, as the tool card shows it."""

    outcome: str
    text: str


_HOOK_SAID = {
    "deny": "blocked by hook {hook}",
    "ask": "sent for approval by hook {hook}",
    "allow": "allowed by hook {hook}",
    "context": "context added by hook {hook}",
    "error": "hook {hook} failed",
    "no_opinion": "hook {hook} ran",
}


def hook_line(record: dict[str, Any]) -> HookLine:
    """``blocked by hook check.sh: reason``, ``context added by hook note.py``..."""
    outcome = str(record.get("outcome", ""))
    said = _HOOK_SAID.get(outcome, "hook {hook}: " + outcome)
    text = said.format(hook=record.get("hook", "?"))
    event = record.get("event")
    if event:
        text += f" ({event})"
    detail = record.get("reason") or record.get("error")
    if detail:
        text += f": {detail}"
    if record.get("updated_input"):
        text += " · input rewritten"
    return HookLine(outcome=outcome, text=text)


@dataclass(slots=True, kw_only=True)
class CallCard:
    """One tool call with everything that happened to it so far."""

    call_id: str
    tool: str
    args: dict[str, Any]
    run_id: str | None
    seq: int
    result: dict[str, Any] | None = None
    waiting: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None
    inner: list[CallCard] = field(default_factory=list)
    """A waiting delegate's child cards that wait for a person (see ``delegate_waits``)."""
    child_run: dict[str, str] | None = None
    """A waiting delegate's child run: its id and status."""
    followed: list[str] = field(default_factory=list)
    """The child conversations read to fill :attr:`inner` (the stream follows them)."""
    call_seq: int = 0
    """The sequence number of the call's own row (``seq`` follows its latest row)."""
    rewound: bool = False
    """A conversation rewind hides it from the model; the page still shows it, marked."""

    kind = "call"

    @property
    def element_id(self) -> str:
        return f"card-{self.call_id}"

    @property
    def data(self) -> dict[str, Any]:
        """The card data the tool's result carries (empty while the call runs)."""
        if self.result is None:
            return {}
        found = self.result.get("data")
        return found if isinstance(found, dict) else {}

    @property
    def state(self) -> Literal["running", "waiting", "stopped", "error", "done"]:
        if self.result is not None:
            if self.data.get("status") == "stopped":
                return "stopped"  # ended by a person (Stop, Kill): not a failure
            return "error" if self.result.get("is_error") else "done"
        if self.waiting is not None and self.decision is None:
            return "waiting"
        return "running"

    @property
    def wait_kind(self) -> str | None:
        """``approval`` or ``question`` while a person must act on this card; else None."""
        if self.state != "waiting" or self.waiting is None:
            return None
        return str(self.waiting.get("wait", {}).get("kind", ""))

    @property
    def wait_id(self) -> str:
        return str((self.waiting or {}).get("wait", {}).get("id", ""))

    @property
    def texts(self) -> list[str]:
        return [
            str(block.get("text", ""))
            for block in (self.result or {}).get("content", [])
            if block.get("type") == "text"
        ]

    @property
    def hooks(self) -> list[HookLine]:
        """What the operator's hooks did to this call (the result's ``data.hooks``)."""
        records = self.data.get("hooks")
        if not isinstance(records, list):
            return []
        return [hook_line(r) for r in records if isinstance(r, dict)]

    @property
    def media(self) -> list[dict[str, Any]]:
        return [
            block
            for block in (self.result or {}).get("content", [])
            if block.get("type") in ("image", "audio", "resource")
        ]


@dataclass(slots=True, kw_only=True)
class CompactionCard:
    """A compaction and whether it applies now ("Show full" switches it off)."""

    id: str
    seq: int
    data: dict[str, Any]
    applied: bool = True
    rewound: bool = False

    kind = "compaction"

    @property
    def element_id(self) -> str:
        return f"compaction-{self.id}"


@dataclass(slots=True, kw_only=True)
class Item:
    """Anything else on the timeline: a message, an answer, a report, a run's end."""

    kind: str
    seq: int
    row: TimelineRow
    rewound: bool = False

    @property
    def element_id(self) -> str:
        return f"row-{self.seq}"

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.row.data)


Entry = CallCard | CompactionCard | Item

_CALL_CARDS = frozenset({"waiting", "decided", "answered"})
"""Card rows that belong to their tool call's card rather than standing alone."""


@dataclass(frozen=True, slots=True)
class Change:
    """What a row does to the page: a new entry, or a new state of one already there."""

    entry: Entry
    new: bool


@dataclass(slots=True)
class TimelineView:
    """The fold of a conversation's rows into the entries of its page."""

    entries: list[Entry] = field(default_factory=list)
    calls: dict[str, CallCard] = field(default_factory=dict)
    compactions: dict[str, CompactionCard] = field(default_factory=dict)
    last_seq: int = 0

    @classmethod
    def of(cls, rows: Iterable[TimelineRow]) -> TimelineView:
        rows = list(rows)
        view = cls()
        for row in rows:
            view.add(row)
        view.mark_rewound(rewound_ranges(rows))
        return view

    def mark_rewound(self, ranges: list[tuple[int, int]]) -> None:
        """Mark the entries rewind cards hid from the model (``ranges`` of sequence numbers)."""
        for entry in self.entries:
            seq = entry.call_seq if isinstance(entry, CallCard) else entry.seq
            entry.rewound = any(first <= seq <= last for first, last in ranges)

    def _new(self, entry: Entry) -> Change:
        self.entries.append(entry)
        return Change(entry, new=True)

    def add(self, row: TimelineRow) -> Change | None:
        """Fold ``row`` in; None when it changes nothing a person sees."""
        self.last_seq = max(self.last_seq, row.seq)
        data = dict(row.data)
        if row.kind == "tool_call" and row.call_id:
            card = CallCard(
                call_id=row.call_id,
                tool=str(data.get("tool", "")),
                args=dict(data.get("args") or {}),
                run_id=row.run_id,
                seq=row.seq,
                call_seq=row.seq,
            )
            self.calls[row.call_id] = card
            return self._new(card)
        folds = row.kind == "tool_result" or data.get("card") in _CALL_CARDS
        if folds and row.call_id and row.call_id in self.calls:
            return self._fold_into_call(self.calls[row.call_id], row, data)
        if row.kind == "card":
            return self._card(row, data)
        if row.kind == "model_turn" and not str(data.get("text", "")).strip():
            return None
        return self._new(Item(kind=row.kind, seq=row.seq, row=row))

    def _fold_into_call(self, card: CallCard, row: TimelineRow, data: dict[str, Any]) -> Change:
        card.seq = row.seq
        if row.kind == "tool_result":
            result = data.get("result")
            card.result = result if isinstance(result, dict) else {}
        elif data.get("card") == "waiting":
            card.waiting, card.decision = data, None
        elif data.get("card") in ("decided", "answered"):
            card.decision = data
        return Change(card, new=False)

    def _card(self, row: TimelineRow, data: dict[str, Any]) -> Change | None:
        name = data.get("card")
        if name == "compaction":
            compaction = CompactionCard(id=str(data.get("id")), seq=row.seq, data=data)
            self.compactions[compaction.id] = compaction
            return self._new(compaction)
        if name == "compaction_applied":
            found = self.compactions.get(str(data.get("id")))
            if found is None:
                return None
            found.applied = bool(data.get("applied"))
            return Change(found, new=False)
        if name in ("run_ended", "workflow", "rewind", "forked"):
            return self._new(Item(kind=f"card:{name}", seq=row.seq, row=row))
        return None
