"""workflows: versioned setups, runs, fires, webhooks, templates

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_templates",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("setup", sa.JSON(), nullable=False),
        sa.Column("evolve", sa.String(length=16), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "workflows",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("next_fire_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_fire_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workflows_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(
            "ix_workflows_status_next_fire", ["status", "next_fire_at"], unique=False
        )

    op.create_table(
        "workflow_fires",
        sa.Column("workflow_id", sa.String(length=64), nullable=False),
        sa.Column("slot", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workflow_id"], ["workflows.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workflow_id", "slot"),
    )
    op.create_table(
        "workflow_hooks",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workflow_id", sa.String(length=64), nullable=False),
        sa.Column("body_schema", sa.JSON(), nullable=False),
        sa.Column("primary", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["workflow_id"], ["workflows.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workflow_hooks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_hooks_workflow_id"), ["workflow_id"], unique=False
        )

    op.create_table(
        "workflow_runs",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("workflow_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("started_by", sa.String(length=64), nullable=False),
        sa.Column("hook_id", sa.String(length=64), nullable=True),
        sa.Column("slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workflow_id"], ["workflows.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id"),
    )
    with op.batch_alter_table("workflow_runs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_runs_conversation_id"), ["conversation_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_workflow_runs_workflow_id"), ["workflow_id"], unique=False
        )

    op.create_table(
        "workflow_versions",
        sa.Column("workflow_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("setup", sa.JSON(), nullable=False),
        sa.Column("changed_by", sa.String(length=64), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workflow_id"], ["workflows.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workflow_id", "version"),
    )
    op.create_table(
        "workflow_hook_keys",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("hook_id", sa.String(length=64), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["hook_id"], ["workflow_hooks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_hash"),
    )
    with op.batch_alter_table("workflow_hook_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_hook_keys_hook_id"), ["hook_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("workflow_hook_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_hook_keys_hook_id"))

    op.drop_table("workflow_hook_keys")
    op.drop_table("workflow_versions")
    with op.batch_alter_table("workflow_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_runs_workflow_id"))
        batch_op.drop_index(batch_op.f("ix_workflow_runs_conversation_id"))

    op.drop_table("workflow_runs")
    with op.batch_alter_table("workflow_hooks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_hooks_workflow_id"))

    op.drop_table("workflow_hooks")
    op.drop_table("workflow_fires")
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.drop_index("ix_workflows_status_next_fire")
        batch_op.drop_index(batch_op.f("ix_workflows_owner_id"))

    op.drop_table("workflows")
    op.drop_table("workflow_templates")
