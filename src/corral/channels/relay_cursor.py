"""How far each bound chat has been sent its conversation: one row number per chat.

Any process may relay a bound conversation — the one that stored its rows at once, the
serving process on its sweep — so a run advanced by a cluster worker still reaches the chat.
A relayer claims the rows after the cursor by moving the cursor with a compare-and-set
before sending them: of two processes that read the same position, one moves it and sends,
the other finds it moved and sends nothing. The claim comes first, so a process that dies
between claim and send loses those messages rather than ever sending one twice.
"""

from __future__ import annotations

from sqlalchemy import exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.channels.store import SenderRecord
from corral.store import channel_tables as ct
from corral.store import runtime_tables as rt

__all__ = ["RelayCursors"]


class RelayCursors:
    """The ``relayed_seq`` of the approved senders bound to conversations."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def position(self, conversation_id: str) -> int | None:
        """The last row sent to the conversation's chat; None when no chat is bound to it."""
        s = ct.ChannelSender
        async with self._sessions() as session:
            found = await session.scalar(
                select(s.relayed_seq).where(
                    s.conversation_id == conversation_id, s.status == "approved"
                )
            )
        return None if found is None else int(found)

    async def claim(self, conversation_id: str, after: int, upto: int) -> bool:
        """Move the cursor from ``after`` to ``upto``; False when another process moved it
        first (it sends those rows) or the chat was unbound meanwhile."""
        s = ct.ChannelSender
        async with self._sessions.begin() as session:
            moved = await session.execute(
                update(s)
                .where(
                    s.conversation_id == conversation_id,
                    s.status == "approved",
                    s.relayed_seq == after,
                )
                .values(relayed_seq=upto)
            )
        return bool(getattr(moved, "rowcount", 0))

    async def behind(self) -> list[SenderRecord]:
        """Bound senders whose conversation has rows their chat was not yet sent."""
        s, r = ct.ChannelSender, rt.ConversationRow
        newer = exists().where(r.conversation_id == s.conversation_id, r.seq > s.relayed_seq)
        async with self._sessions() as session:
            rows = await session.scalars(
                select(s).where(s.status == "approved", s.conversation_id.is_not(None), newer)
            )
            return [SenderRecord.of(row) for row in rows]
