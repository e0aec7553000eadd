"""approvals: the conversation a parked call belongs to

Revision ID: 0018_approval_conversation
Revises: 0017_ui_sessions
Create Date: 2026-12-05 04:35:00.000000

A call over MCP belongs to its session's conversation but to no run: the approved call must
run in that conversation (a background shell reports into it, todos keeps its list there).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_approval_conversation"
down_revision = "0017_ui_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("conversation_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("conversation_id")
