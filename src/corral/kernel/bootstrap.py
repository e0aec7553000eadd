"""First start: the folders, built-in roles, the local owner, the default agent, sources."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import ConfigError, ToolError
from corral.files import make_private_folder
from corral.kernel.config import CONFIG_VERSION, bump_config_version
from corral.kernel.drive_ownership import hand_drive_to_sandbox
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
    """The data folder, the drive, and the platform's private folders as real folders.

    ``data://.corral`` is made here, before any command runs, so that the sandbox masks it
    from the first call: left missing, a command could plant a link there and the platform's
    run folders would follow it out of the data folder."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    settings.drive_dir.mkdir(exist_ok=True)
    _private_folder(settings.data_dir, settings.private_dir)
    _private_folder(settings.drive_dir, settings.drive_private_dir)
    _private_folder(settings.drive_dir, settings.drive_private_dir / "conversations")
    hand_drive_to_sandbox(settings.data_dir, settings.drive_dir, uid=settings.sandbox_uid)
    database = settings.database_path
    if database is not None:
        _private_database(database)


def _private_folder(root: Path, path: Path) -> None:
    """A real folder at ``path`` for the platform's files; refuse to start on anything else.

    A link or a file there is refused rather than moved aside: it was not made by the
    platform, and the operator should see what it is (and where it points) before it goes."""
    try:
        make_private_folder(root, path)
    except ToolError as err:
        raise ConfigError(
            f"cannot start: {err.message}. The platform keeps its private files in "
            f"{str(path)!r}; after checking what is there, remove it (the platform makes the "
            "folder again on start)"
        ) from None


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
