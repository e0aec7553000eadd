"""The complete schema: every module that defines tables, imported so that Alembic and the
schema tests see all of them. A new table module adds one import line here."""

from __future__ import annotations

from corral.store import (
    budget_tables,
    channel_tables,
    connect_tables,
    context_tables,
    delegation_tables,
    rule_tables,
    runtime_tables,
    shell_tables,
    skill_tables,
    tables,
    trace_tables,
    workflow_tables,
)
from corral.store.tables import Base

metadata = Base.metadata

__all__ = [
    "budget_tables",
    "channel_tables",
    "connect_tables",
    "context_tables",
    "delegation_tables",
    "metadata",
    "rule_tables",
    "runtime_tables",
    "shell_tables",
    "skill_tables",
    "tables",
    "trace_tables",
    "workflow_tables",
]
