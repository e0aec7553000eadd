"""store facts: text facts about the store, first the data folder a cluster's database serves

Revision ID: 0020_store_facts
Revises: 0019_run_lease
Create Date: 2026-12-05 04:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_store_facts"
down_revision = "0019_run_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_facts",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("store_facts")
