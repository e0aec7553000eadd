"""What the conversation list shows beside each conversation: whether it runs, waits for the
person, or its last turn failed (the newest run of each, one query for the whole list)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import runtime_tables as rt

__all__ = ["ConversationState", "conversation_states"]

ConversationState = Literal["running", "waiting", "failed"]

_SHOWN: dict[str, ConversationState] = {
    "queued": "running",
    "running": "running",
    "parked": "waiting",
    "failed": "failed",
}


async def conversation_states(
    sessions: async_sessionmaker[AsyncSession], conversation_ids: Sequence[str]
) -> dict[str, ConversationState]:
    """The state of each conversation in ``conversation_ids`` worth showing (others: none)."""
    if not conversation_ids:
        return {}
    query = (
        select(rt.Run.conversation_id, rt.Run.status)
        .where(rt.Run.conversation_id.in_(conversation_ids))
        .order_by(rt.Run.created_at)
    )
    newest: dict[str, str] = {}
    async with sessions() as session:
        for conversation_id, status in await session.execute(query):
            newest[conversation_id] = status
    return {cid: _SHOWN[status] for cid, status in newest.items() if status in _SHOWN}
