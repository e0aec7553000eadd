"""Tables of workflows: their versioned setups, runs, schedule fires, webhooks and templates.

A workflow's setup is a JSON document; every change writes a new ``workflow_versions`` row
and moves ``workflows.version``, so an earlier setup stays readable. ``workflow_fires`` has
one row per schedule slot, keyed by (workflow, slot): inserting it is how a scheduler claims
a slot, so a slot fires once whichever process or restart gets there. ``workflow_hook_deliveries``
does the same for a webhook delivery's ``Idempotency-Key``, keyed by (hook, key hash). Webhook
keys are kept only as SHA-256 hashes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = [
    "Workflow",
    "WorkflowFire",
    "WorkflowHook",
    "WorkflowHookDelivery",
    "WorkflowHookKey",
    "WorkflowRun",
    "WorkflowTemplate",
    "WorkflowVersion",
]


class Workflow(Base):
    __tablename__ = "workflows"
    __table_args__ = (Index("ix_workflows_status_next_fire", "status", "next_fire_at"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    title: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    next_fire_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """The next schedule slot, kept so a scheduler tick is one indexed query."""
    last_fire_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """The latest slot fired or skipped (the anchor the next slot is computed from)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkflowVersion(Base):
    __tablename__ = "workflow_versions"
    workflow_id: Mapped[str] = mapped_column(
        ForeignKey("workflows.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    setup: Mapped[dict[str, Any]] = mapped_column(JSON)
    changed_by: Mapped[str] = mapped_column(String(64))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkflowRun(Base):
    __tablename__ = "workflow_runs"
    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(
        ForeignKey("workflows.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    trigger: Mapped[str] = mapped_column(String(16))
    """``manual``, ``schedule`` or ``webhook``."""
    started_by: Mapped[str] = mapped_column(String(64))
    hook_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    slot: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkflowFire(Base):
    __tablename__ = "workflow_fires"
    workflow_id: Mapped[str] = mapped_column(
        ForeignKey("workflows.id", ondelete="CASCADE"), primary_key=True
    )
    slot: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(16))
    """``started``, ``skipped`` (missed while down, policy skip) or ``refused``."""
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkflowHook(Base):
    __tablename__ = "workflow_hooks"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(
        ForeignKey("workflows.id", ondelete="CASCADE"), index=True
    )
    body_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    primary: Mapped[bool] = mapped_column(Boolean, default=False)
    """The webhook the tool's ``set`` manages; others come from routes and the CLI."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    removed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class WorkflowHookKey(Base):
    __tablename__ = "workflow_hook_keys"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    hook_id: Mapped[str] = mapped_column(
        ForeignKey("workflow_hooks.id", ondelete="CASCADE"), index=True
    )
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class WorkflowHookDelivery(Base):
    """A webhook delivery that sent an ``Idempotency-Key``: inserting it claims the key."""

    __tablename__ = "workflow_hook_deliveries"
    hook_id: Mapped[str] = mapped_column(
        ForeignKey("workflow_hooks.id", ondelete="CASCADE"), primary_key=True
    )
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    """SHA-256 of the key as normalised (outer whitespace stripped, case folded)."""
    body_hash: Mapped[str] = mapped_column(String(64))
    """SHA-256 of the body as canonical JSON: a repeat with another body is refused."""
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The run the first delivery started; None while it is still starting."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkflowTemplate(Base):
    __tablename__ = "workflow_templates"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    setup: Mapped[dict[str, Any]] = mapped_column(JSON)
    evolve: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """``agent``: the goal a workflow from this template sets is not locked to the agent."""
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
