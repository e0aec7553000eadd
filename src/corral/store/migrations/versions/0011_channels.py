"""channels: connections, paired senders and seen vendor events

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 15:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_connections",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=64), nullable=False),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("last_error_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent", sa.Integer(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("poll_offset", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "channel_senders",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("connection", sa.String(length=64), nullable=False),
        sa.Column("sender_id", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("sender_name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("code", sa.String(length=16), nullable=False),
        sa.Column("code_expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("thread", sa.String(length=128), nullable=False),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("connection", "sender_id", "chat_id"),
    )
    op.create_index("ix_channel_senders_connection", "channel_senders", ["connection"])
    op.create_index("ix_channel_senders_code", "channel_senders", ["code"])
    op.create_index("ix_channel_senders_conversation_id", "channel_senders", ["conversation_id"])
    op.create_table(
        "channel_events",
        sa.Column("connection", sa.String(length=64), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("connection", "event_id"),
    )


def downgrade() -> None:
    op.drop_table("channel_events")
    op.drop_index("ix_channel_senders_conversation_id", table_name="channel_senders")
    op.drop_index("ix_channel_senders_code", table_name="channel_senders")
    op.drop_index("ix_channel_senders_connection", table_name="channel_senders")
    op.drop_table("channel_senders")
    op.drop_table("channel_connections")
