"""agent runtime: conversations, timeline rows, runs, deliveries; agents.step_budget

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 15:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("step_budget", sa.Integer(), nullable=True))
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=True),
        sa.Column("profile", sa.String(length=16), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("active_run_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversations_owner_id"), ["owner_id"], unique=False)
    op.create_table(
        "conversation_rows",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("call_id", sa.String(length=100), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("conversation_id", "seq"),
    )
    with op.batch_alter_table("conversation_rows", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversation_rows_run_id"), ["run_id"], unique=False)
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("parent_run_id", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column("profile", sa.String(length=16), nullable=False),
        sa.Column("narrowing", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("hop", sa.Integer(), nullable=False),
        sa.Column("step_budget", sa.Integer(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("wall_clock_limit_s", sa.Float(), nullable=False),
        sa.Column("active_seconds", sa.Float(), nullable=False),
        sa.Column("waiting", sa.JSON(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_runs_conversation_status", ["conversation_id", "status"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)
    op.create_table(
        "conversation_deliveries",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("source_id", sa.String(length=100), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("hop", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_seq", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conversation_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_deliveries_conversation_status", ["conversation_id", "status"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("conversation_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_deliveries_conversation_status")
    op.drop_table("conversation_deliveries")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_status"))
        batch_op.drop_index("ix_runs_conversation_status")
    op.drop_table("runs")
    with op.batch_alter_table("conversation_rows", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversation_rows_run_id"))
    op.drop_table("conversation_rows")
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_owner_id"))
    op.drop_table("conversations")
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("step_budget")
