"""Tables of the agent runtime: conversations and their timelines, runs, queued deliveries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["Conversation", "ConversationRow", "Delivery", "Run"]


class Conversation(Base):
    """A timeline of rows; at most one run is active (queued, running or parked) at a time."""

    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    agent: Mapped[str] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(300), nullable=True)
    profile: Mapped[str] = mapped_column(String(16))
    title: Mapped[str] = mapped_column(Text, default="")
    active_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ConversationRow(Base):
    """One timeline entry: user message, model turn, tool call or result, report, card…"""

    __tablename__ = "conversation_rows"
    __table_args__ = (UniqueConstraint("conversation_id", "seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    user_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Run(Base):
    """One execution of the agent loop (a chat turn, a continuation, later delegates)."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_conversation_status", "conversation_id", "status"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    parent_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    agent: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(300))
    profile: Mapped[str] = mapped_column(String(16))
    narrowing: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    trigger: Mapped[str] = mapped_column(String(16))
    hop: Mapped[int] = mapped_column(Integer, default=0)
    step_budget: Mapped[int] = mapped_column(Integer)
    steps: Mapped[int] = mapped_column(Integer, default=0)
    wall_clock_limit_s: Mapped[float] = mapped_column(Float)
    active_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    waiting: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Bumped at every claim of the run by a worker: its writes check it (fencing)."""
    outage_retries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Times the run was handed back after a database outage (bounded by a setting)."""
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # W3C traceparent of the span that queued the run (or of its first job): its jobs continue it.
    trace_parent: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Delivery(Base):
    """A background report or inbox message waiting to continue its conversation."""

    __tablename__ = "conversation_deliveries"
    __table_args__ = (Index("ix_deliveries_conversation_status", "conversation_id", "status"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))  # "report" | "message"
    status: Mapped[str] = mapped_column(String(16))  # "queued" | "delivered"
    user_id: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(32))
    source_id: Mapped[str] = mapped_column(String(100))
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text, default="")
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    hop: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    delivered_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
