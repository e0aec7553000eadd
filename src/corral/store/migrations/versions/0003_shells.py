"""background shells

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-02 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shells",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("plane", sa.String(length=16), nullable=False),
        sa.Column("confinement", sa.String(length=32), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pid_start", sa.Integer(), nullable=True),
        sa.Column("log_path", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("output_chars", sa.Integer(), nullable=False),
        sa.Column("stop_requested_by", sa.String(length=64), nullable=True),
        sa.Column("report_state", sa.String(length=16), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("shells", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_shells_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_shells_user_id"), ["user_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_shells_conversation_id"), ["conversation_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_shells_report_state"), ["report_state"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("shells", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_shells_report_state"))
        batch_op.drop_index(batch_op.f("ix_shells_conversation_id"))
        batch_op.drop_index(batch_op.f("ix_shells_user_id"))
        batch_op.drop_index(batch_op.f("ix_shells_status"))
    op.drop_table("shells")
