"""Alembic environment: runs on a connection handed over by :mod:`corral.store.migrate`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from corral.store.schema import metadata

target_metadata = metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through corral.store.migrate (or `corral db upgrade`)")
_run(connection)
