"""channel decisions: chat messages that offered a decision (edited when it ends), and
each person's choice to be told of new pending decisions in their paired chats

Revision ID: 0025_channel_decisions
Revises: 0024_decisions
Create Date: 2026-12-05 07:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_channel_decisions"
down_revision = "0024_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_wait_messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("wait_kind", sa.String(length=16), nullable=False),
        sa.Column("wait_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("connection", sa.String(length=64), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("message_ref", sa.String(length=128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("edited", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_channel_wait_messages_wait_id", "channel_wait_messages", ["wait_id"], unique=False
    )
    op.create_table(
        "channel_notify",
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )


def downgrade() -> None:
    op.drop_table("channel_notify")
    op.drop_index("ix_channel_wait_messages_wait_id", table_name="channel_wait_messages")
    op.drop_table("channel_wait_messages")
