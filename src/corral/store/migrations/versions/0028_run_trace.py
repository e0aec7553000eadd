"""run trace: the traceparent a run's jobs continue, wherever they run

Revision ID: 0028_run_trace
Revises: 0027_credential_injection
Create Date: 2026-12-06 01:55:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028_run_trace"
down_revision = "0027_credential_injection"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("trace_parent", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("trace_parent")
