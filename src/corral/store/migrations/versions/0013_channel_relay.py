"""channel relay: how far each bound chat has been sent its conversation's rows

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 18:45:00.000000

Chats bound before this migration start at their conversation's last row, so nothing
already said is sent again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "channel_senders",
        sa.Column("relayed_seq", sa.Integer(), nullable=False, server_default="0"),
    )
    op.execute(
        "UPDATE channel_senders SET relayed_seq = coalesce((SELECT max(r.seq) "
        "FROM conversation_rows r WHERE r.conversation_id = channel_senders.conversation_id), 0) "
        "WHERE conversation_id IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("channel_senders") as batch:
        batch.drop_column("relayed_seq")
