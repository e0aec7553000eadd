"""What channels keep about decisions: the chat messages that offered one (to be edited when
it ends) and each person's choice to be told of new pending decisions in their chats."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import channel_tables as ct
from corral.store.tables import utcnow

__all__ = ["ChatDecisionMessages", "WaitMessage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitMessage:
    """A chat message that offered a decision with buttons."""

    id: int
    wait_kind: str
    wait_id: str
    conversation_id: str
    call_id: str
    connection: str
    chat_id: str
    message_ref: str
    text: str

    @classmethod
    def of(cls, row: ct.ChannelWaitMessage) -> WaitMessage:
        return cls(
            id=row.id,
            wait_kind=row.wait_kind,
            wait_id=row.wait_id,
            conversation_id=row.conversation_id,
            call_id=row.call_id,
            connection=row.connection,
            chat_id=row.chat_id,
            message_ref=row.message_ref,
            text=row.text,
        )


class ChatDecisionMessages:
    """The chat messages that offered decisions, and who is told of new ones (not the
    decision's own record: that is :class:`corral.kernel.decisions.DecisionStore`)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def note(
        self,
        *,
        wait_kind: str,
        wait_id: str,
        conversation_id: str,
        call_id: str,
        connection: str,
        chat_id: str,
        message_ref: str,
        text: str,
    ) -> None:
        """Keep a message that offered ``wait_id`` to a chat."""
        async with self._sessions.begin() as session:
            session.add(
                ct.ChannelWaitMessage(
                    wait_kind=wait_kind,
                    wait_id=wait_id,
                    conversation_id=conversation_id,
                    call_id=call_id,
                    connection=connection,
                    chat_id=chat_id,
                    message_ref=message_ref,
                    text=text,
                    created_at=utcnow(),
                )
            )

    async def unedited(self, wait_id: str | None = None, *, limit: int = 100) -> list[WaitMessage]:
        """Messages whose decision's end they do not say yet (of ``wait_id``, or any)."""
        query = (
            select(ct.ChannelWaitMessage)
            .where(ct.ChannelWaitMessage.edited.is_(False))
            .order_by(ct.ChannelWaitMessage.id)
            .limit(limit)
        )
        if wait_id is not None:
            query = query.where(ct.ChannelWaitMessage.wait_id == wait_id)
        async with self._sessions() as session:
            return [WaitMessage.of(row) for row in await session.scalars(query)]

    async def offered(self, wait_id: str, connection: str, chat_id: str) -> bool:
        """Whether ``wait_id`` was offered to this chat (a notification sent it there)."""
        async with self._sessions() as session:
            found = await session.scalar(
                select(ct.ChannelWaitMessage.id).where(
                    ct.ChannelWaitMessage.wait_id == wait_id,
                    ct.ChannelWaitMessage.connection == connection,
                    ct.ChannelWaitMessage.chat_id == chat_id,
                )
            )
        return found is not None

    async def take_edit(self, message_id: int) -> bool:
        """Take the one right to edit a message (False: another process took it)."""
        async with self._sessions.begin() as session:
            outcome = await session.execute(
                update(ct.ChannelWaitMessage)
                .where(
                    ct.ChannelWaitMessage.id == message_id,
                    ct.ChannelWaitMessage.edited.is_(False),
                )
                .values(edited=True)
            )
        return int(getattr(outcome, "rowcount", 0)) == 1

    async def notify(self, user_id: str) -> bool:
        """Whether ``user_id`` is told of new pending decisions in their chats."""
        async with self._sessions() as session:
            row = await session.get(ct.ChannelNotify, user_id)
        return bool(row is not None and row.enabled)

    async def set_notify(self, user_id: str, enabled: bool) -> None:
        async with self._sessions.begin() as session:
            row = await session.get(ct.ChannelNotify, user_id)
            if row is None:
                session.add(ct.ChannelNotify(user_id=user_id, enabled=enabled, updated_at=utcnow()))
            else:
                row.enabled, row.updated_at = enabled, utcnow()
