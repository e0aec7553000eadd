"""Tables of shell execution: background shells and their durable completion reports, the
connections of the egress proxy, and the checkpoints of writing calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["CheckpointRecord", "EgressApprovedHost", "EgressConnection", "Shell"]


class Shell(Base):
    """A background shell: who started it, where it runs, how it ended, its report.

    ``status`` moves once from ``running`` to ``exited``, ``stopped``, ``timed_out``,
    ``failed`` or ``lost``; every move is a conditional update, so exactly one writer
    finishes a shell and queues its report. ``owner`` names the platform instance that
    runs the process (``host:pid:start:instance``), so a second process opening the same
    store can tell a live shell from one lost to a restart.
    """

    __tablename__ = "shells"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    conversation_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    agent: Mapped[str] = mapped_column(String(100))
    command: Mapped[str] = mapped_column(Text)
    cwd: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text, default="")
    plane: Mapped[str] = mapped_column(String(16), default="app")
    confinement: Mapped[str] = mapped_column(String(32))
    owner: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pid_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The process's start time in clock ticks since boot, against pid reuse."""
    log_path: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    output_chars: Mapped[int] = mapped_column(Integer, default=0)
    stop_requested_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    report_state: Mapped[str] = mapped_column(String(16), default="none", index=True)
    """none (still running), pending, reported, disabled (notify off), no_conversation."""
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class EgressConnection(Base):
    """One connection a sandboxed command made through the egress proxy, and its fate."""

    __tablename__ = "egress_connections"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    agent: Mapped[str] = mapped_column(String(100), default="")
    protocol: Mapped[str] = mapped_column(String(16))
    """connect, http or socks5."""
    host: Mapped[str] = mapped_column(String(255))
    port: Mapped[int] = mapped_column(Integer)
    method: Mapped[str | None] = mapped_column(String(20), nullable=True)
    path: Mapped[str | None] = mapped_column(Text, nullable=True)
    allowed: Mapped[bool] = mapped_column(Boolean)
    rule: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    bytes_up: Mapped[int] = mapped_column(Integer, default=0)
    bytes_down: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    duration_s: Mapped[float] = mapped_column(Float, default=0.0)


class CheckpointRecord(Base):
    """A writing call that changed files, kept to rewind: one row in its conversation.

    What it changed lives in ``<data>/checkpoints/calls/<call_id>.json``; the row says how
    much, and orders the conversation's checkpoints for rewind and retention."""

    __tablename__ = "checkpoints"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    call_id: Mapped[str] = mapped_column(String(100), unique=True)
    conversation_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_id: Mapped[str] = mapped_column(String(64), default="")
    tool: Mapped[str] = mapped_column(String(100), default="")
    files_changed: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    """Bytes of prior content kept for the call (before sharing between checkpoints)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class EgressApprovedHost(Base):
    """A host a person allowed for an agent when a sandboxed command asked ("allow for this
    agent"): that person's later calls through that agent reach it without asking."""

    __tablename__ = "egress_approved_hosts"
    __table_args__ = (UniqueConstraint("user_id", "agent", "host"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    agent: Mapped[str] = mapped_column(String(100))
    host: Mapped[str] = mapped_column(String(255))
    decision_id: Mapped[str] = mapped_column(String(64))
    """The answered question that allowed it (who, from where and when: ``decisions``)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
