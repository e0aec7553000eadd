"""workflow hook deliveries: one row per Idempotency-Key a webhook delivery sent

Revision ID: 0014_hook_deliveries
Revises: 0013
Create Date: 2026-12-04 20:50:00.000000

The primary key (hook, key hash) is what makes two concurrent deliveries of one key start
one run, whichever process receives them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_hook_deliveries"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_hook_deliveries",
        sa.Column("hook_id", sa.String(length=64), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["hook_id"], ["workflow_hooks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("hook_id", "key_hash"),
    )


def downgrade() -> None:
    op.drop_table("workflow_hook_deliveries")
