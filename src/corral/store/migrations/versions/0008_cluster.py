"""cluster: procrastinate's job tables on PostgreSQL (nothing changes on SQLite)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 15:30:00.000000

The schema is procrastinate's own (``procrastinate.schema.SchemaManager.get_schema``) at the
version pinned in pyproject.toml; a later procrastinate with schema changes needs a Corral
migration that applies its migration scripts.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy.util import await_only

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_TABLES = (
    "procrastinate_periodic_defers",
    "procrastinate_events",
    "procrastinate_jobs",
    "procrastinate_workers",
)
_DROP_FUNCTIONS = """
DO $$
DECLARE f record;
BEGIN
    FOR f IN SELECT oid::regprocedure AS sig FROM pg_proc WHERE proname LIKE 'procrastinate%'
    LOOP
        EXECUTE 'DROP FUNCTION IF EXISTS ' || f.sig || ' CASCADE';
    END LOOP;
END $$
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager

    # Several statements and PL/pgSQL bodies: sent as one simple query on the raw driver
    # connection, inside the migration's transaction.
    driver = bind.connection.driver_connection
    assert driver is not None
    await_only(driver.execute(SchemaManager.get_schema()))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    driver = bind.connection.driver_connection
    assert driver is not None
    await_only(driver.execute(_DROP_FUNCTIONS))
    op.execute(
        "DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type, "
        "procrastinate_job_to_defer_v1 CASCADE"
    )
