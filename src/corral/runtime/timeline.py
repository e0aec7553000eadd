"""Timeline rows: what a conversation is made of, in sequence order.

Row kinds and their ``data``:

- ``user_message``: ``{"text"}`` — a person typed it (``user_id`` says who).
- ``model_turn``: ``{"text", "model", "usage"}`` — what the model said in one step; its tool
  calls follow as ``tool_call`` rows.
- ``tool_call``: ``{"tool", "args"}`` with ``call_id`` — a call the model made.
- ``tool_result``: ``{"tool", "result"}`` with ``call_id`` — :meth:`ToolResult.to_json`;
  images/audio made by the server inline, media from files as resource references.
- ``background_report``: ``{"source", "source_id", "title", "text", "data"}`` — written only
  by the platform when background work ends; no model output can create one.
- ``message``: ``{"text", "sender": {...}, "hop"}`` — an inbox message from another agent.
- ``card``: ``{"card": <name>, ...}`` — events for people (approval or question waiting,
  decided, answered; run ended; ``compaction`` and ``compaction_applied``); never part of
  the model's prompt.

Rows are appended, never rewritten; compaction applies *overlays* when the prompt is built
instead of changing rows (:mod:`corral.runtime.compaction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from corral.store import runtime_tables as rt

__all__ = ["PROMPT_KINDS", "NewRow", "RowKind", "TimelineRow"]

RowKind = Literal[
    "user_message",
    "model_turn",
    "tool_call",
    "tool_result",
    "background_report",
    "message",
    "card",
]

PROMPT_KINDS: frozenset[str] = frozenset(
    {"user_message", "model_turn", "tool_call", "tool_result", "background_report", "message"}
)
"""Row kinds that reach the model's prompt (cards never do)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRow:
    """A row about to be appended; the store gives it its sequence number."""

    kind: RowKind
    data: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    user_id: str | None = None
    call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineRow:
    """A stored row. Overlays may return modified copies; stored rows never change."""

    seq: int
    kind: RowKind
    data: Mapping[str, Any]
    run_id: str | None = None
    user_id: str | None = None
    call_id: str | None = None
    created_at: datetime | None = None

    @classmethod
    def of(cls, row: rt.ConversationRow) -> TimelineRow:
        return cls(
            seq=row.seq,
            kind=row.kind,  # type: ignore[arg-type]  # only RowKind values are stored
            data=row.data,
            run_id=row.run_id,
            user_id=row.user_id,
            call_id=row.call_id,
            created_at=row.created_at,
        )

    @classmethod
    def stored(
        cls,
        seq: int,
        kind: RowKind,
        data: Mapping[str, Any],
        run_id: str | None,
        user_id: str | None,
        call_id: str | None,
        created_at: datetime | None,
    ) -> TimelineRow:
        """A row from stored values, built without the frozen ``__init__`` (which sets
        each field through ``object.__setattr__``): a cold read builds tens of thousands,
        and this is less than half the cost. The result is the same frozen row."""
        row = _new(cls)
        _SET_SEQ(row, seq)
        _SET_KIND(row, kind)
        _SET_DATA(row, data)
        _SET_RUN_ID(row, run_id)
        _SET_USER_ID(row, user_id)
        _SET_CALL_ID(row, call_id)
        _SET_CREATED_AT(row, created_at)
        return row

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "run_id": self.run_id,
            "user_id": self.user_id,
            "call_id": self.call_id,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "data": dict(self.data),
        }


_new = object.__new__
_SET_SEQ, _SET_KIND, _SET_DATA, _SET_RUN_ID, _SET_USER_ID, _SET_CALL_ID, _SET_CREATED_AT = (
    TimelineRow.__dict__[name].__set__
    for name in ("seq", "kind", "data", "run_id", "user_id", "call_id", "created_at")
)
