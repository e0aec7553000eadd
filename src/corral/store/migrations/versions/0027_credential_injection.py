"""credential injection: the hosts a credential is for and how the egress proxy sends it

Revision ID: 0027_credential_injection
Revises: 0026_egress_connections
Create Date: 2026-12-05 07:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_credential_injection"
down_revision = "0026_egress_connections"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("credentials") as batch:
        batch.add_column(sa.Column("inject_hosts", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(
            sa.Column("inject_as", sa.String(length=16), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column("inject_field", sa.String(length=128), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("credentials") as batch:
        batch.drop_column("inject_field")
        batch.drop_column("inject_as")
        batch.drop_column("inject_hosts")
