"""delegate: child conversations tied to the parent call that started them

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delegations",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("parent_conversation_id", sa.String(length=64), nullable=False),
        sa.Column("parent_run_id", sa.String(length=64), nullable=False),
        sa.Column("parent_call_id", sa.String(length=100), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("background", sa.Boolean(), nullable=False),
        sa.Column("parent_waits", sa.Boolean(), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("reach", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["parent_conversation_id"], ["conversations.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("conversation_id"),
    )
    with op.batch_alter_table("delegations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_delegations_parent_conversation_id"),
            ["parent_conversation_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_delegations_parent_run_id"), ["parent_run_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("delegations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_delegations_parent_run_id"))
        batch_op.drop_index(batch_op.f("ix_delegations_parent_conversation_id"))
    op.drop_table("delegations")
