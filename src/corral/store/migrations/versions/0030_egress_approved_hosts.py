"""egress approved hosts: domains a person allowed for an agent when a command asked

Revision ID: 0030_egress_approved_hosts
Revises: 0029_checkpoints
Create Date: 2026-12-06 03:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_egress_approved_hosts"
down_revision = "0029_checkpoints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "egress_approved_hosts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "agent", "host"),
    )
    op.create_index("ix_egress_approved_hosts_user_id", "egress_approved_hosts", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_egress_approved_hosts_user_id", table_name="egress_approved_hosts")
    op.drop_table("egress_approved_hosts")
