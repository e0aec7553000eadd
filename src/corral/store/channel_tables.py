"""Tables of messaging channels: connections, paired senders and seen vendor events.

A connection row holds only public configuration; its secrets (bot token, signing secret)
are credentials in the encrypted store, named after the connection. A sender row is one
person on one chat of one connection: pending with an expiring code until the connection
owner approves (mapping them to a platform user) or rejects them; an approved sender's
messages go to the conversation bound to that chat. A seen event row makes a vendor's
retry of the same event a no-op.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql import false

from corral.store.tables import Base, utcnow

__all__ = ["ChannelConnection", "ChannelEvent", "ChannelSender"]


class ChannelConnection(Base):
    __tablename__ = "channel_connections"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(String(16))
    """``telegram``, ``slack`` or ``webhook``."""
    owner_id: Mapped[str] = mapped_column(String(64))
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    """Public configuration only (mode, outbound URL, agent, model)."""
    state: Mapped[str] = mapped_column(String(16), default="connected")
    last_inbound_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str] = mapped_column(Text, default="")
    last_error_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    sent: Mapped[int] = mapped_column(Integer, default=0)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    poll_offset: Mapped[int] = mapped_column(Integer, default=0)
    undelivered: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Messages given up on after ``channels_outage_retry_s`` (or lost mid-send by a
    relayer that died, where the vendor has no idempotency key)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChannelSender(Base):
    __tablename__ = "channel_senders"
    __table_args__ = (UniqueConstraint("connection", "sender_id", "chat_id"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    connection: Mapped[str] = mapped_column(String(64), index=True)
    sender_id: Mapped[str] = mapped_column(String(128))
    chat_id: Mapped[str] = mapped_column(String(128))
    sender_name: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(16))
    """``pending``, ``approved`` or ``rejected``."""
    code: Mapped[str] = mapped_column(String(16), index=True)
    code_expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    user_id: Mapped[str | None] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(64), index=True)
    thread: Mapped[str] = mapped_column(String(128), default="")
    relayed_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The last row of the bound conversation sent to this chat (or skipped as not for it);
    it moves only after the vendor accepted the row."""
    claimed_by: Mapped[str] = mapped_column(String(64), default="", server_default="")
    """The relayer sending this chat its rows now ('' when none); see ``claimed_until``."""
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the claim lapses unless renewed: a relayer that died is succeeded after it."""
    sending_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The row being sent now (0: none); a long row is sent in pieces."""
    sending_part: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Pieces of row ``sending_seq`` the vendor accepted."""
    in_flight: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Piece ``sending_part`` is at the vendor now: whether it arrived is unknown if the
    relayer dies before the answer."""
    decided_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChannelEvent(Base):
    __tablename__ = "channel_events"
    connection: Mapped[str] = mapped_column(String(64), primary_key=True)
    event_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChannelWaitMessage(Base):
    """A chat message that offered a decision (an approval's or a question's buttons); it is
    edited to say how the decision ended, wherever it was made."""

    __tablename__ = "channel_wait_messages"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    wait_kind: Mapped[str] = mapped_column(String(16))
    wait_id: Mapped[str] = mapped_column(String(64), index=True)
    conversation_id: Mapped[str] = mapped_column(String(64))
    call_id: Mapped[str] = mapped_column(String(64))
    connection: Mapped[str] = mapped_column(String(64))
    chat_id: Mapped[str] = mapped_column(String(128))
    message_ref: Mapped[str] = mapped_column(String(128))
    text: Mapped[str] = mapped_column(Text)
    """The message's text as sent (the vendor's encoding), kept for the edit."""
    edited: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChannelNotify(Base):
    """A person's choice to be told of their new pending decisions in their paired chats."""

    __tablename__ = "channel_notify"
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
