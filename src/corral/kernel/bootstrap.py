"""First start: the folders, built-in roles, the local owner, the default agent, sources."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.config import CONFIG_VERSION, bump_config_version
from corral.policy.grants import BUILTIN_ROLES
from corral.settings import Settings
from corral.store import tables as t

__all__ = ["DEFAULT_AGENT", "SYSTEM_SOURCES", "bootstrap", "prepare_folders"]

DEFAULT_AGENT = "default"
BOOTSTRAP = "bootstrap_version"

SYSTEM_SOURCES: dict[str, str] = {
    "sys-usr": "/usr",
    "sys-bin": "/bin",
    "sys-sbin": "/sbin",
    "sys-lib": "/lib",
    "sys-lib64": "/lib64",
    "sys-lib32": "/lib32",
    "sys-opt": "/opt",
}
"""The system toolchain, readable by everyone and writable by no one."""


def prepare_folders(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    settings.drive_dir.mkdir(exist_ok=True)
    # Made up front so a sandbox can mask it: a missing one could be created by a command.
    settings.drive_private_dir.mkdir(mode=0o700, exist_ok=True)
    settings.private_dir.mkdir(mode=0o700, exist_ok=True)
    os.chmod(settings.private_dir, 0o700)
    database = settings.database_path
    if database is not None:
        _private_database(database)


def _private_database(path: Path) -> None:
    """The SQLite file, its WAL and its shared memory readable by the platform's user only.

    SQLite gives the WAL and SHM files the mode of the database file, so creating that one
    0600 before the first connection covers all three; existing files are narrowed too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        part = path.with_name(name)
        if part.exists():
            os.chmod(part, 0o600)


async def bootstrap(sessions: async_sessionmaker[AsyncSession], settings: Settings) -> None:
    """Seed what a fresh store needs; safe to run on every start, in one transaction."""
    async with sessions.begin() as session:
        meta = {m.key: m for m in await session.scalars(select(t.Meta))}
        if CONFIG_VERSION not in meta:
            session.add(t.Meta(key=CONFIG_VERSION, value=1))
        roles = {r.name: r for r in await session.scalars(select(t.Role))}
        changed = False
        for name, features in BUILTIN_ROLES.items():
            role = roles.get(name)
            if role is None:
                session.add(t.Role(name=name, features=list(features), builtin=True))
                changed = True
            elif role.builtin and list(role.features) != list(features):
                role.features = list(features)
                changed = True
        await session.flush()
        owner = await session.scalar(select(t.User).where(t.User.role == "owner").limit(1))
        if owner is None:
            session.add(t.User(id="u_owner", name=settings.owner_name, role="owner"))
            changed = True
        if await session.get(t.Agent, DEFAULT_AGENT) is None:
            session.add(
                t.Agent(
                    name=DEFAULT_AGENT,
                    instructions="You are a careful, capable assistant working in the project "
                    "drive (data://). Use the tools you are given; explain what you did.",
                    profile="balanced",
                )
            )
            changed = True
        if BOOTSTRAP not in meta:
            session.add(t.Meta(key=BOOTSTRAP, value=1))
            session.add(
                t.Source(
                    name="data",
                    connector="local",
                    root=str(settings.drive_dir),
                    description="The project drive",
                    builtin=True,
                )
            )
            session.add(
                t.SourceRight(source="data", principal_kind="role", principal="owner", rights="rwx")
            )
            for name, root in SYSTEM_SOURCES.items():
                session.add(
                    t.Source(
                        name=name,
                        connector="local",
                        root=root,
                        description="System toolchain (read-only)",
                        builtin=True,
                    )
                )
                session.add(
                    t.SourceRight(source=name, principal_kind="role", principal="*", rights="r")
                )
            changed = True
        if changed and CONFIG_VERSION in meta:
            await bump_config_version(session)
