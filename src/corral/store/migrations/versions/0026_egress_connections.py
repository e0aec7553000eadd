"""egress connections: one row per connection a sandboxed command made through the proxy

Revision ID: 0026_egress_connections
Revises: 0025_channel_decisions
Create Date: 2026-12-05 07:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_egress_connections"
down_revision = "0025_channel_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "egress_connections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("call_id", sa.String(length=64), nullable=True),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=True),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("rule", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("bytes_up", sa.Integer(), nullable=False),
        sa.Column("bytes_down", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_egress_connections_conversation_id", "egress_connections", ["conversation_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_egress_connections_conversation_id", table_name="egress_connections")
    op.drop_table("egress_connections")
