"""checkpoints: one row per writing call that changed files, kept to rewind

Revision ID: 0029_checkpoints
Revises: 0028_run_trace
Create Date: 2026-12-06 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029_checkpoints"
down_revision = "0028_run_trace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("call_id", sa.String(length=100), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=100), nullable=False),
        sa.Column("files_changed", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("call_id"),
    )
    op.create_index("ix_checkpoints_conversation_id", "checkpoints", ["conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_checkpoints_conversation_id", table_name="checkpoints")
    op.drop_table("checkpoints")
