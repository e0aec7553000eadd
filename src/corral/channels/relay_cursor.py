"""How far each bound chat has been sent its conversation, and who is sending it now.

Any process may relay a bound conversation — the one that stored its rows at once, the
serving process on its sweep — so a run advanced by a cluster worker still reaches the chat.
A relayer first *takes* the chat: a lease (``claimed_by`` until ``claimed_until``, renewed
at every step) that another process respects until it lapses, so two processes never send
one chat at once and a relayer that died is succeeded. The cursor ``relayed_seq`` moves only
after the vendor accepted a row, so a claim never loses a row. Before each vendor call the
relayer notes the row and piece in flight (``sending_seq``, ``sending_part``, ``in_flight``);
its successor therefore knows which single piece may or may not have arrived, and the relay
decides by the vendor whether to send it again (:class:`Claim`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.channels.store import SenderRecord
from corral.store import channel_tables as ct
from corral.store import runtime_tables as rt
from corral.store.tables import as_utc, utcnow

__all__ = ["LEASE_S", "Claim", "RelayCursors"]

LEASE_S = 30.0
"""How long a chat stays with a relayer that stopped renewing its claim (it died); the
live setting ``channels_claim_lease_s`` sets it for the platform's relay."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A chat taken for sending: where its cursor is and what a predecessor left."""

    relayed_seq: int
    sending_seq: int
    """A row partly sent (0: none): its first ``sending_part`` pieces arrived."""
    sending_part: int
    in_flight: bool
    """Piece ``sending_part`` was at the vendor when its relayer stopped: it may have
    arrived."""


class RelayCursors:
    """The ``relayed_seq`` and claims of the approved senders bound to conversations."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, lease_s: float = LEASE_S
    ) -> None:
        self._sessions = sessions
        self.holder = "relay-" + secrets.token_hex(8)
        """This process's name on its claims (a restarted process is a new holder)."""
        self.lease_s = lease_s
        """Set from ``channels_claim_lease_s`` before each catch-up."""

    def _lease(self) -> timedelta:
        return timedelta(seconds=self.lease_s)

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

    async def take(self, conversation_id: str) -> Claim | None:
        """Claim the conversation's chat for this process; None when no chat is bound or
        another process holds a live claim (it sends those rows)."""
        s = ct.ChannelSender
        now = utcnow()
        async with self._sessions.begin() as session:
            row = await session.scalar(
                select(s).where(s.conversation_id == conversation_id, s.status == "approved")
            )
            if row is None:
                return None
            free = (
                row.claimed_by in ("", self.holder)
                or row.claimed_until is None
                or as_utc(row.claimed_until) <= now
            )
            if not free:
                return None
            moved = await session.execute(
                update(s)
                .where(
                    s.id == row.id,
                    s.claimed_by == row.claimed_by,
                    s.relayed_seq == row.relayed_seq,
                )
                .values(claimed_by=self.holder, claimed_until=now + self._lease())
            )
            if not getattr(moved, "rowcount", 0):
                return None
            return Claim(
                relayed_seq=row.relayed_seq,
                sending_seq=row.sending_seq,
                sending_part=row.sending_part,
                in_flight=row.in_flight,
            )

    async def _held(self, conversation_id: str, **values: object) -> bool:
        s = ct.ChannelSender
        async with self._sessions.begin() as session:
            moved = await session.execute(
                update(s)
                .where(
                    s.conversation_id == conversation_id,
                    s.status == "approved",
                    s.claimed_by == self.holder,
                )
                .values(claimed_until=utcnow() + self._lease(), **values)
            )
        return bool(getattr(moved, "rowcount", 0))

    async def sending(self, conversation_id: str, seq: int, part: int) -> bool:
        """Piece ``part`` of row ``seq`` goes to the vendor now; False when the claim was
        lost (the chat was unbound, or the lease lapsed and another process took it)."""
        return await self._held(conversation_id, sending_seq=seq, sending_part=part, in_flight=True)

    async def not_sent(self, conversation_id: str) -> bool:
        """The vendor refused the piece in flight: it did not arrive (renews the claim)."""
        return await self._held(conversation_id, in_flight=False)

    async def sent_piece(self, conversation_id: str, seq: int, part: int) -> bool:
        """The vendor accepted piece ``part`` of row ``seq``."""
        return await self._held(
            conversation_id, sending_seq=seq, sending_part=part + 1, in_flight=False
        )

    async def done(self, conversation_id: str, seq: int) -> bool:
        """Every row up to ``seq`` was sent (or given up on, or is not for the chat)."""
        return await self._held(
            conversation_id, relayed_seq=seq, sending_seq=0, sending_part=0, in_flight=False
        )

    async def release(self, conversation_id: str) -> None:
        """Give the chat back (what is in flight stays noted for the next relayer)."""
        s = ct.ChannelSender
        async with self._sessions.begin() as session:
            await session.execute(
                update(s)
                .where(s.conversation_id == conversation_id, s.claimed_by == self.holder)
                .values(claimed_by="", claimed_until=None)
            )

    async def release_all(self) -> None:
        """Give back every chat this process holds (on shutdown)."""
        s = ct.ChannelSender
        async with self._sessions.begin() as session:
            await session.execute(
                update(s)
                .where(s.claimed_by == self.holder)
                .values(claimed_by="", claimed_until=None)
            )

    async def behind(self) -> list[SenderRecord]:
        """Bound senders whose conversation has rows their chat was not yet sent and that no
        live claim holds."""
        s, r = ct.ChannelSender, rt.ConversationRow
        newer = exists().where(r.conversation_id == s.conversation_id, r.seq > s.relayed_seq)
        now = utcnow()
        async with self._sessions() as session:
            rows = await session.scalars(
                select(s).where(s.status == "approved", s.conversation_id.is_not(None), newer)
            )
            return [
                SenderRecord.of(row)
                for row in rows
                if row.claimed_by in ("", self.holder)
                or row.claimed_until is None
                or as_utc(row.claimed_until) <= now
            ]
