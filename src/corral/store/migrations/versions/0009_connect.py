"""connect: an approval's sealed secret arguments, and git remotes

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 16:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("approvals", sa.Column("sealed", sa.Text(), nullable=True))
    op.create_table(
        "git_remotes",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("repo", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("credential", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("git_remotes")
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("sealed")
