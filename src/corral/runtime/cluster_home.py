"""The data folder a cluster's database serves: recorded by the first serve or worker, then
required of every other.

Every process of a cluster must see the same data folder (the project drive, transcripts,
the credentials key) at the same path. A worker started from another folder would use
another drive and refuse every ``execute``; it refuses to start instead, naming both
folders. The claim also leaves ``<data_dir>/private/cluster.json`` naming the database, so a
CLI command run from a shell without ``CORRAL_DATABASE_URL`` can warn before it creates a
SQLite database next to the cluster (see :func:`cluster_marked`).
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import ConfigError
from corral.files import write_text_atomically
from corral.store.tables import StoreFact

__all__ = ["DATA_DIR_FACT", "claim_data_folder", "cluster_marked"]

DATA_DIR_FACT = "cluster_data_dir"
MARKER = "cluster.json"


async def claim_data_folder(
    sessions: async_sessionmaker[AsyncSession],
    data_dir: Path,
    private_dir: Path,
    database: str,
) -> None:
    """Record ``data_dir`` as the cluster's, or refuse when another one is recorded."""
    wanted = str(data_dir)
    try:
        async with sessions.begin() as session:
            recorded = await session.scalar(
                select(StoreFact.value).where(StoreFact.key == DATA_DIR_FACT)
            )
            if recorded is None:
                session.add(StoreFact(key=DATA_DIR_FACT, value=wanted))
    except IntegrityError:  # another process recorded one at the same moment
        async with sessions() as session:
            recorded = await session.scalar(
                select(StoreFact.value).where(StoreFact.key == DATA_DIR_FACT)
            )
    if recorded is not None and recorded != wanted:
        raise ConfigError(
            f"this process uses the data folder {wanted}, but the cluster's database "
            f"{database} serves {recorded}: every serve and worker must see the same data "
            f"folder at the same path. Start it with --data-dir {recorded} (or mount the "
            "shared folder there)"
        )
    if not (private_dir / MARKER).exists():
        payload = json.dumps({"database_url": database}) + "\n"
        write_text_atomically(private_dir, private_dir / MARKER, payload)


def cluster_marked(private_dir: Path) -> str | None:
    """The database (password hidden) of the cluster that claimed this data folder, if any."""
    try:
        found = json.loads((private_dir / MARKER).read_text())
    except (OSError, ValueError):
        return None
    database = found.get("database_url") if isinstance(found, dict) else None
    return database if isinstance(database, str) else None
