"""run outage retries: how many times a run was handed back after a database outage

Revision ID: 0021_run_outage_retries
Revises: 0020_store_facts
Create Date: 2026-12-05 07:20:00.000000

A run whose job meets a database outage is retried; past ``cluster_outage_retries`` such
retries it ends ``failed`` saying why, instead of being retried forever on an error that
does not pass (a full disk, say).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_run_outage_retries"
down_revision = "0020_store_facts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column("outage_retries", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("outage_retries")
