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

from sqlalchemy import JSON, DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

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
    """The last row of the bound conversation sent to this chat (or skipped as not for it)."""
    decided_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChannelEvent(Base):
    __tablename__ = "channel_events"
    connection: Mapped[str] = mapped_column(String(64), primary_key=True)
    event_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
