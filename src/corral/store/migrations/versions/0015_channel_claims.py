"""channel claims: a relayer's lease on a chat, the row it is sending, undelivered counts

Revision ID: 0015_channel_claims
Revises: 0014_hook_deliveries
Create Date: 2026-12-05 04:05:00.000000

The cursor ``relayed_seq`` now moves only after the vendor accepted a row; a relayer holds
the chat by a lease (``claimed_by`` until ``claimed_until``) and notes the row and piece
in flight (``sending_seq``, ``sending_part``, ``in_flight``), so a relayer that died is
succeeded and its last send is known.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_channel_claims"
down_revision = "0014_hook_deliveries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("channel_senders") as batch:
        batch.add_column(
            sa.Column("claimed_by", sa.String(length=64), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("sending_seq", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("sending_part", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("in_flight", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("channel_connections") as batch:
        batch.add_column(sa.Column("undelivered", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("channel_connections") as batch:
        batch.drop_column("undelivered")
    with op.batch_alter_table("channel_senders") as batch:
        for column in ("in_flight", "sending_part", "sending_seq", "claimed_until", "claimed_by"):
            batch.drop_column(column)
