"""The database schema. Alembic migrations in ``migrations/`` create and evolve it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Agent",
    "ApiToken",
    "Approval",
    "Base",
    "Decision",
    "LiveSetting",
    "LogRecord",
    "Meta",
    "PackageState",
    "Role",
    "Source",
    "SourceRight",
    "StoreFact",
    "UiSession",
    "User",
    "as_utc",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """A stored time read back as UTC (SQLite returns times without their zone)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class Meta(Base):
    """Small key/value facts about the store itself (e.g. the configuration version)."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, default=0)


class StoreFact(Base):
    """Text facts about the store (e.g. the data folder a cluster's database serves)."""

    __tablename__ = "store_facts"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class LiveSetting(Base):
    __tablename__ = "live_settings"
    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Role(Base):
    __tablename__ = "roles"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    features: Mapped[list[str]] = mapped_column(JSON, default=list)
    builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str] = mapped_column(Text, default="")


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(ForeignKey("roles.name"))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class UiSession(Base):
    """A browser session of the web UI; the cookie holds a secret, this row its hash."""

    __tablename__ = "ui_sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(128), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Source(Base):
    __tablename__ = "sources"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    connector: Mapped[str] = mapped_column(String(32), default="local")
    root: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SourceRight(Base):
    __tablename__ = "source_rights"
    __table_args__ = (UniqueConstraint("source", "principal_kind", "principal"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(ForeignKey("sources.name", ondelete="CASCADE"))
    principal_kind: Mapped[str] = mapped_column(String(8))  # "role" or "user"
    principal: Mapped[str] = mapped_column(String(100))  # role name, user id, or "*"
    rights: Mapped[str] = mapped_column(String(8))  # subset of "rwx"


class PackageState(Base):
    __tablename__ = "package_state"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Agent(Base):
    __tablename__ = "agents"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    instructions: Mapped[str] = mapped_column(Text, default="")
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    profile: Mapped[str] = mapped_column(String(16), default="balanced")
    tool_mode: Mapped[str] = mapped_column(String(8), default="all")  # "all" | "custom"
    tools_off: Mapped[list[str]] = mapped_column(JSON, default=list)
    allowlist: Mapped[list[str]] = mapped_column(JSON, default=list)
    step_budget: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Approval(Base):
    """A tool call parked until a person approves or denies it."""

    __tablename__ = "approvals"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # pending/approved/denied/closed
    tool: Mapped[str] = mapped_column(String(100))
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    agent: Mapped[str] = mapped_column(String(100))
    profile: Mapped[str] = mapped_column(String(16))
    narrowing: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    call_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    conversation_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The call's conversation (a run's, or an MCP session's, which has no run)."""
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    decided_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    sealed: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The call's secret arguments, encrypted with the credential key (or NULL)."""
    dispatched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """When the run's job started the approved call (a job taking the run over after that
    does not run it a second time)."""


class Decision(Base):
    """Something a run (or a call) waits on a person for: an approval, a question, an
    elicitation… The compare-and-set point of every answer, from any surface.

    ``id`` is the id of the record it decides (``ap_…``, ``q_…``); ``status`` moves once
    from ``pending`` to ``decided``, ``expired`` or ``closed`` (its run ended first).
    """

    __tablename__ = "decisions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))  # approval/question/elicitation/egress/oauth
    status: Mapped[str] = mapped_column(String(16), index=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    """The only person who may answer."""
    conversation_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    call_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    offered_on: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """NULL: ``created_at`` plus the live setting ``decisions_expire_days``."""
    answer: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    decided_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    decided_by_name: Mapped[str | None] = mapped_column(String(100), nullable=True)
    surface: Mapped[str | None] = mapped_column(String(16), nullable=True)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)


class LogRecord(Base):
    """Structured platform log: perf.slow warnings, run log lines, audit facts."""

    __tablename__ = "log_records"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float, index=True)
    level: Mapped[str] = mapped_column(String(8))
    kind: Mapped[str] = mapped_column(String(64), index=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
