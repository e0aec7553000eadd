"""Forking a conversation's history: the rows the model had seen before one of its calls,
copied into a new conversation.

The model turn that made the call is the cut: every row before it is what the model saw
when it decided the call. Rows keep their sequence numbers and call ids, so compaction
and rewind cards (which name rows by both) apply in the fork exactly as they did then; cards for
people about the original's runs (approvals, questions, run ends) stay behind, and no run
id is carried over. Nothing is run again: rows are copied, not replayed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import UsageError
from corral.runtime.compaction.cards import CARD, TOGGLE
from corral.runtime.rewinds import CARD as REWIND_CARD
from corral.runtime.timeline import PROMPT_KINDS, TimelineRow
from corral.store import runtime_tables as rt
from corral.store.tables import utcnow

__all__ = ["FORK_CARD", "copy_history", "cut_before", "history_before"]

FORK_CARD = "forked"
"""The card a fork starts its own rows with: where it came from."""

_CARRIED_CARDS = frozenset({CARD, TOGGLE, REWIND_CARD})
"""Cards that change what the model sees (compactions, rewinds), so a fork keeps them."""


def _carried(row: TimelineRow) -> bool:
    if row.kind in PROMPT_KINDS:
        return True
    return row.kind == "card" and row.data.get("card") in _CARRIED_CARDS


def cut_before(rows: Sequence[TimelineRow], call_id: str) -> int:
    """The sequence number of the model turn that made call ``call_id``: the model had seen
    the rows before it when it decided the call."""
    at = next((r.seq for r in rows if r.kind == "tool_call" and r.call_id == call_id), None)
    if at is None:
        raise UsageError(f"no call {call_id!r} in this conversation")
    return max((r.seq for r in rows if r.kind == "model_turn" and r.seq < at), default=at)


def history_before(rows: Sequence[TimelineRow], cut: int) -> list[TimelineRow]:
    """The rows of a timeline (``rows``, oldest first) a fork at ``cut`` keeps."""
    return [r for r in rows if r.seq < cut and _carried(r)]


async def copy_history(
    sessions: async_sessionmaker[AsyncSession],
    into: str,
    rows: Sequence[TimelineRow],
    origin: dict[str, Any],
) -> int:
    """Store ``rows`` in the new conversation ``into`` as they are, then the fork card
    (``origin``); returns the card's sequence number."""
    last = max((r.seq for r in rows), default=0)
    values = [
        {
            "conversation_id": into,
            "seq": r.seq,
            "kind": r.kind,
            "run_id": None,
            "user_id": r.user_id,
            "call_id": r.call_id,
            "data": dict(r.data),
            "created_at": r.created_at or utcnow(),
        }
        for r in rows
    ]
    values.append(
        {
            "conversation_id": into,
            "seq": last + 1,
            "kind": "card",
            "run_id": None,
            "user_id": None,
            "call_id": None,
            "data": {"card": FORK_CARD, **origin},
            "created_at": utcnow(),
        }
    )
    async with sessions.begin() as session:
        await session.execute(insert(rt.ConversationRow), values)
    return last + 1
