"""Compactions as timeline cards: the record of what was trimmed, how, and what it saved.

A compaction lives only in ``card`` rows, so the overlay is a function of the timeline:

- ``{"card": "compaction", "id", "source", "action", "targets", …}`` — one per
  compact_history call (``source: "compact_history"``) or /summarize (``source:
  "summarize"``, covering rows ``first_seq`` to ``last_seq``), applied when written;
- ``{"card": "compaction_applied", "id", "applied", "by"}`` — "Show full" switched it off,
  or it was switched on again. The newest such card says whether it applies now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = ["CARD", "TOGGLE", "Action", "Compaction", "Source", "Target"]

CARD = "compaction"
TOGGLE = "compaction_applied"

Action = Literal["remove", "summarize", "truncate"]
Source = Literal["compact_history", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One trimmed row: a tool output (by its tool_use_id) or a non-tool row (by seq)."""

    seq: int
    kind: str
    tool_use_id: str | None = None
    tool: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def ref(self) -> str:
        if self.tool_use_id is not None:
            return f"tool_use_id {self.tool_use_id}"
        return f"sequence {self.seq}"

    @property
    def label(self) -> str:
        if self.tool_use_id is not None:
            return f"{self.tool or 'tool'} output"
        return self.kind.replace("_", " ")

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "tool_use_id": self.tool_use_id,
            "tool": self.tool,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Target:
        return cls(
            seq=int(raw["seq"]),
            kind=str(raw.get("kind", "")),
            tool_use_id=raw.get("tool_use_id"),
            tool=raw.get("tool"),
            tokens_before=int(raw.get("tokens_before", 0)),
            tokens_after=int(raw.get("tokens_after", 0)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    id: str
    source: Source
    action: Action
    targets: tuple[Target, ...] = ()
    summary: str | None = None
    keep_chars: int = 1000
    reason: str = ""
    first_seq: int = 0
    """/summarize: the first row the summary stands for."""
    last_seq: int = 0
    """/summarize: the last row the summary stands for."""
    tokens_before: int = 0
    tokens_after: int = 0
    tokenizer: str = ""
    applied: bool = True
    """As written; the newest ``compaction_applied`` card overrides it."""
    by: str = ""
    call_id: str | None = None
    card_seq: int = 0

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    def card(self) -> dict[str, Any]:
        return {
            "card": CARD,
            "id": self.id,
            "source": self.source,
            "action": self.action,
            "targets": [t.to_json() for t in self.targets],
            "summary": self.summary,
            "keep_chars": self.keep_chars,
            "reason": self.reason,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_saved,
            "tokenizer": self.tokenizer,
            "applied": self.applied,
            "by": self.by,
            "call_id": self.call_id,
        }

    @classmethod
    def from_card(cls, data: Mapping[str, Any], *, card_seq: int) -> Compaction:
        return cls(
            id=str(data["id"]),
            source=cast(Source, data.get("source", "compact_history")),
            action=cast(Action, data.get("action", "remove")),
            targets=tuple(Target.from_json(t) for t in data.get("targets") or ()),
            summary=data.get("summary"),
            keep_chars=int(data.get("keep_chars") or 1000),
            reason=str(data.get("reason") or ""),
            first_seq=int(data.get("first_seq") or 0),
            last_seq=int(data.get("last_seq") or 0),
            tokens_before=int(data.get("tokens_before") or 0),
            tokens_after=int(data.get("tokens_after") or 0),
            tokenizer=str(data.get("tokenizer") or ""),
            applied=bool(data.get("applied", True)),
            by=str(data.get("by") or ""),
            call_id=data.get("call_id"),
            card_seq=card_seq,
        )

    def to_json(self, *, applied: bool | None = None) -> dict[str, Any]:
        """For people and the meta export: the card, with the current applied state."""
        shown = self.card()
        shown["applied"] = self.applied if applied is None else applied
        shown["card_seq"] = self.card_seq
        return shown
