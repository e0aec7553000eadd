"""run budgets: each run's effective limits and spend, and owners' conversation budgets

Revision ID: 0022_run_budgets
Revises: 0021_run_outage_retries
Create Date: 2026-12-05 07:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_run_budgets"
down_revision = "0021_run_outage_retries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_budgets",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("charged_to", sa.String(length=64), nullable=True),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("spent", sa.JSON(), nullable=False),
        sa.Column("exhausted", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_run_budgets_charged_to", "run_budgets", ["charged_to"])
    op.create_table(
        "conversation_budgets",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("set_by", sa.String(length=64), nullable=False),
        sa.Column("charged_to", sa.String(length=64), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("conversation_id"),
    )


def downgrade() -> None:
    op.drop_table("conversation_budgets")
    op.drop_index("ix_run_budgets_charged_to", table_name="run_budgets")
    op.drop_table("run_budgets")
