"""run lease: the epoch of a run's claim by a worker, bumped at every claim and takeover

Revision ID: 0019_run_lease
Revises: 0018_approval_conversation
Create Date: 2026-12-05 04:30:00.000000

A worker's writes to a run (its rows, its state) check the lease it claimed in the same
statement, so a worker that paused past a takeover cannot store a second result.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_run_lease"
down_revision = "0018_approval_conversation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("lease", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("lease")
