"""trace spans: the local trace store of recent runs, shown without any collector

Revision ID: 0031_trace_spans
Revises: 0030_egress_approved_hosts
Create Date: 2026-12-06 03:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031_trace_spans"
down_revision = "0030_egress_approved_hosts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_spans",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("parent_id", sa.String(length=16), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=False),
        sa.Column("end_ns", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id", "span_id"),
    )
    op.create_index("ix_trace_spans_start_ns", "trace_spans", ["start_ns"])


def downgrade() -> None:
    op.drop_index("ix_trace_spans_start_ns", table_name="trace_spans")
    op.drop_table("trace_spans")
