"""web UI sessions: server-side records that sign-out and revocation end

Revision ID: 0017_ui_sessions
Revises: 0016_remembered_rules
Create Date: 2026-12-05 04:20:00.000000

A session cookie was a signed value that nothing could take back before its week was out;
now it holds a secret whose hash is a row here, and ending the row ends the session.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_ui_sessions"
down_revision = "0016_remembered_rules"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ui_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("secret_hash", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_hash"),
    )


def downgrade() -> None:
    op.drop_table("ui_sessions")
