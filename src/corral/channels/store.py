"""The channels' rows: connections, senders (pairing and bound chats), seen events."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import channel_tables as ct
from corral.store import runtime_tables as rt
from corral.store.tables import as_utc, utcnow

__all__ = ["ChannelStore", "ConnectionRecord", "SenderRecord"]

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRecord:
    """A connection as stored: public fields and counters, never a secret."""

    name: str
    provider: str
    owner_id: str
    fields: dict[str, str]
    state: str
    last_inbound_at: datetime | None
    last_error: str
    last_error_at: datetime | None
    sent: int
    retries: int
    failures: int
    poll_offset: int
    undelivered: int = 0

    @classmethod
    def of(cls, row: ct.ChannelConnection) -> ConnectionRecord:
        return cls(
            name=row.name,
            provider=row.provider,
            owner_id=row.owner_id,
            fields=dict(row.fields),
            state=row.state,
            last_inbound_at=as_utc(row.last_inbound_at) if row.last_inbound_at else None,
            last_error=row.last_error,
            last_error_at=as_utc(row.last_error_at) if row.last_error_at else None,
            sent=row.sent,
            retries=row.retries,
            failures=row.failures,
            poll_offset=row.poll_offset,
            undelivered=row.undelivered or 0,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SenderRecord:
    """One sender on one chat: pending with a code, approved (mapped, maybe bound) or
    rejected."""

    id: str
    connection: str
    sender_id: str
    chat_id: str
    sender_name: str
    status: str
    code: str
    code_expires_at: datetime
    user_id: str | None
    conversation_id: str | None
    thread: str

    @classmethod
    def of(cls, row: ct.ChannelSender) -> SenderRecord:
        return cls(
            id=row.id,
            connection=row.connection,
            sender_id=row.sender_id,
            chat_id=row.chat_id,
            sender_name=row.sender_name,
            status=row.status,
            code=row.code,
            code_expires_at=as_utc(row.code_expires_at),
            user_id=row.user_id,
            conversation_id=row.conversation_id,
            thread=row.thread,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "connection": self.connection,
            "sender_id": self.sender_id,
            "chat_id": self.chat_id,
            "sender_name": self.sender_name,
            "status": self.status,
            "code": self.code if self.status == "pending" else None,
            "code_expires_at": self.code_expires_at.isoformat(),
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
        }


def new_code() -> str:
    """An 8-character pairing code without look-alike characters (0/O, 1/I)."""
    return "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))


class ChannelStore:
    """Reads and writes the channel tables."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    # -- connections ------------------------------------------------------------------------

    async def add_connection(
        self, name: str, provider: str, owner_id: str, fields: dict[str, str]
    ) -> ConnectionRecord:
        row = ct.ChannelConnection(
            name=name,
            provider=provider,
            owner_id=owner_id,
            fields=fields,
            state="connected",
            last_error="",
            sent=0,
            retries=0,
            failures=0,
            poll_offset=0,
            undelivered=0,
            created_at=utcnow(),
        )
        async with self._sessions.begin() as session:
            session.add(row)
        return ConnectionRecord.of(row)

    async def connection(self, name: str) -> ConnectionRecord | None:
        async with self._sessions() as session:
            row = await session.get(ct.ChannelConnection, name)
        return ConnectionRecord.of(row) if row is not None else None

    async def connections(self) -> list[ConnectionRecord]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ct.ChannelConnection).order_by(ct.ChannelConnection.name)
            )
            return [ConnectionRecord.of(r) for r in rows]

    async def remove_connection(self, name: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(delete(ct.ChannelEvent).where(ct.ChannelEvent.connection == name))
            await session.execute(
                delete(ct.ChannelSender).where(ct.ChannelSender.connection == name)
            )
            await session.execute(
                delete(ct.ChannelConnection).where(ct.ChannelConnection.name == name)
            )

    async def note(self, name: str, **values: Any) -> None:
        """Set columns of a connection (state, last inbound, poll offset)."""
        async with self._sessions.begin() as session:
            await session.execute(
                update(ct.ChannelConnection)
                .where(ct.ChannelConnection.name == name)
                .values(**values)
            )

    async def count(self, name: str, column: str, *, error: str | None = None) -> None:
        """Add one to ``sent``, ``retries``, ``failures`` or ``undelivered``; record ``error``
        when given."""
        target = getattr(ct.ChannelConnection, column)
        values: dict[str, Any] = {column: target + 1}
        if error is not None:
            values |= {"last_error": error[:2000], "last_error_at": utcnow()}
        await self.note(name, **values)

    # -- events -----------------------------------------------------------------------------

    async def first_sight(self, connection: str, event_id: str) -> bool:
        """Record a vendor event id; False when it was seen before (a retry)."""
        try:
            async with self._sessions.begin() as session:
                session.add(
                    ct.ChannelEvent(connection=connection, event_id=event_id, seen_at=utcnow())
                )
        except IntegrityError:
            return False
        return True

    # -- senders ----------------------------------------------------------------------------

    async def sender(self, connection: str, sender_id: str, chat_id: str) -> SenderRecord | None:
        async with self._sessions() as session:
            row = await session.scalar(
                select(ct.ChannelSender).where(
                    ct.ChannelSender.connection == connection,
                    ct.ChannelSender.sender_id == sender_id,
                    ct.ChannelSender.chat_id == chat_id,
                )
            )
        return SenderRecord.of(row) if row is not None else None

    async def pending(
        self, connection: str, sender_id: str, chat_id: str, name: str, ttl_s: int
    ) -> tuple[SenderRecord, bool]:
        """The sender's pending row with a live code; True when the code is new."""
        now = utcnow()
        async with self._sessions.begin() as session:
            row = await session.scalar(
                select(ct.ChannelSender).where(
                    ct.ChannelSender.connection == connection,
                    ct.ChannelSender.sender_id == sender_id,
                    ct.ChannelSender.chat_id == chat_id,
                )
            )
            fresh = row is None or as_utc(row.code_expires_at) <= now
            if row is None:
                row = ct.ChannelSender(
                    id="cs_" + secrets.token_hex(8),
                    connection=connection,
                    sender_id=sender_id,
                    chat_id=chat_id,
                    sender_name=name[:200],
                    status="pending",
                    thread="",
                    created_at=now,
                )
                session.add(row)
            if fresh:
                row.code = new_code()
                row.code_expires_at = now + timedelta(seconds=ttl_s)
            await session.flush()
            return SenderRecord.of(row), fresh

    async def by_code(self, code: str) -> SenderRecord | None:
        async with self._sessions() as session:
            row = await session.scalar(
                select(ct.ChannelSender).where(
                    ct.ChannelSender.code == code.strip().upper(),
                    ct.ChannelSender.status == "pending",
                )
            )
        return SenderRecord.of(row) if row is not None else None

    async def decide(
        self, sender: str, status: str, *, by: str, user_id: str | None = None
    ) -> bool:
        """Move a pending sender to approved or rejected once; False if it was not pending."""
        async with self._sessions.begin() as session:
            moved = await session.execute(
                update(ct.ChannelSender)
                .where(ct.ChannelSender.id == sender, ct.ChannelSender.status == "pending")
                .values(status=status, user_id=user_id, decided_by=by)
            )
        return bool(getattr(moved, "rowcount", 0))

    async def senders(
        self, *, status: str | None = None, connections: list[str] | None = None
    ) -> list[SenderRecord]:
        query = select(ct.ChannelSender).order_by(ct.ChannelSender.created_at)
        if status is not None:
            query = query.where(ct.ChannelSender.status == status)
        if connections is not None:
            query = query.where(ct.ChannelSender.connection.in_(connections))
        async with self._sessions() as session:
            return [SenderRecord.of(r) for r in await session.scalars(query)]

    async def bind(self, sender: str, conversation_id: str, thread: str) -> None:
        """Bind the sender's chat to ``conversation_id``; the chat is sent what is written
        from now on."""
        last = select(func.coalesce(func.max(rt.ConversationRow.seq), 0)).where(
            rt.ConversationRow.conversation_id == conversation_id
        )
        async with self._sessions.begin() as session:
            await session.execute(
                update(ct.ChannelSender)
                .where(ct.ChannelSender.id == sender)
                .values(
                    conversation_id=conversation_id,
                    thread=thread,
                    relayed_seq=last.scalar_subquery(),
                    sending_seq=0,
                    sending_part=0,
                    in_flight=False,
                )
            )

    async def bind_thread(self, sender: str, thread: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(ct.ChannelSender).where(ct.ChannelSender.id == sender).values(thread=thread)
            )

    async def bound(self) -> list[SenderRecord]:
        """Approved senders whose chat has a conversation."""
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ct.ChannelSender).where(
                    ct.ChannelSender.status == "approved",
                    ct.ChannelSender.conversation_id.is_not(None),
                )
            )
            return [SenderRecord.of(r) for r in rows]
