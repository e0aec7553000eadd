"""remembered permission rules: prefixes people chose to remember when answering approvals

Revision ID: 0016_remembered_rules
Revises: 0015_channel_claims
Create Date: 2026-12-05 04:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_remembered_rules"
down_revision = "0015_channel_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "remembered_rules",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=100), nullable=True),
        sa.Column("pattern", sa.JSON(), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("justification", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("approval_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_remembered_rules_user_id", "remembered_rules", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_remembered_rules_user_id", table_name="remembered_rules")
    op.drop_table("remembered_rules")
