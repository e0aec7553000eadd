"""agents.pinned_tools: tools an agent always gets in full, never deferred by tool_search

Revision ID: 0023_agent_pinned_tools
Revises: 0022_run_budgets
Create Date: 2026-12-05 07:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_agent_pinned_tools"
down_revision = "0022_run_budgets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("pinned_tools", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("pinned_tools")
