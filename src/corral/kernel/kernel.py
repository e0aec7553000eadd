"""The kernel: what the runtime and every service depend on.

One open store (engine and sessions), the loaded tools and the dispatch pipeline, the
configuration cache, identity, approvals and the platform log — and the services packages
installed, which every call receives. The kernel knows nothing of the runtime or of the
composition root above it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from corral.connect.keyfile import CredentialKey
from corral.errors import NotFound, UsageError
from corral.kernel.accounts import Identity
from corral.kernel.admin import Admin
from corral.kernel.approvals import ApprovalStore
from corral.kernel.bootstrap import bootstrap, prepare_folders
from corral.kernel.command_rules import CommandRules
from corral.kernel.config import ConfigCache, ConfigSnapshot, UserInfo
from corral.kernel.logs import LogStore
from corral.kernel.trace_store import TraceStore
from corral.policy.identity import Caller
from corral.secrets import Redactor
from corral.settings import Settings
from corral.store import check_reachable, make_engine, make_sessionmaker, upgrade
from corral.store.meta_reads import MetaReader, meta_reader
from corral.store.pg_writer import PgWriter
from corral.store.writer import SqliteWriter, open_writer
from corral.tools.checked_files import CheckedFiles
from corral.tools.dispatch import Dispatcher
from corral.tools.registry import Registry, discover
from corral.tools.services import Services

__all__ = ["CHECKED_TOOL_FILES", "Kernel", "open_kernel"]

CHECKED_TOOL_FILES = "checked_tool_files.json"
"""In the private folder: the tool files that passed the JSON Schema checks (CheckedFiles)."""


class Kernel:
    def __init__(
        self,
        settings: Settings,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        registry: Registry,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.sessions = sessions
        self.writer: SqliteWriter | PgWriter | None = open_writer(engine)
        """The store's writer for the hot appends (None: SQLite in memory)."""
        read_meta, self._meta_reader = meta_reader(self.writer)
        self.reader: MetaReader | None = self._meta_reader
        """Small reads on the calling thread (a SQLite file only; else None)."""
        self.registry = registry
        self.config = ConfigCache(sessions, settings, read_meta)
        self.logs = LogStore(sessions)
        self.approvals = ApprovalStore(sessions, CredentialKey.in_private_dir(settings.private_dir))
        self.identity = Identity(sessions, self.config, read_meta, self.reader)
        self.admin = Admin(
            sessions,
            self.config,
            known_tools=lambda: set(registry.tools) | set(registry.pending),
            known_packages=lambda: set(registry.packages),
        )
        self.dispatcher = Dispatcher(
            registry=registry,
            state=self.config,
            approvals=self.approvals,
            slow_calls=self.logs,
            settings=settings,
        )
        self.traces = TraceStore(sessions, self._trace_settings, self.writer)
        """The local trace store: the spans of recent runs (on while the platform traces)."""
        self.traces.attach()
        self.command_rules = CommandRules.in_data_dir(settings.data_dir, sessions)
        """Permission rules: the rule files and the remembered ones (the ``rules`` stage)."""
        self.services = Services()
        """What every call receives as ``ctx.services``; the composition root fills it."""

    async def caller(self, user: str | None = None) -> Caller:
        """Resolve a user id or name (None: the local owner) with the role's current grants."""
        snapshot = await self.config.snapshot()
        info = _user_in(snapshot, user)
        if info is None or info.role not in snapshot.roles:
            # The snapshot may be up to live_refresh_seconds old: a user or role another
            # process just added (a token of theirs is already accepted) is looked for once
            # more, in a snapshot checked now.
            snapshot = await self.config.checked()
            info = _user_in(snapshot, user)
        if info is None:
            raise NotFound(f"no user {user!r}; `corral users list` shows them")
        if info.disabled:
            raise UsageError(f"user {info.name!r} is disabled")
        grants = snapshot.roles.get(info.role)
        if grants is None:
            raise NotFound(f"user {info.name!r} has role {info.role!r}, which no longer exists")
        return Caller(user_id=info.id, name=info.name, role=info.role, grants=grants)

    async def live_settings(self) -> dict[str, Any]:
        return dict((await self.config.dispatch_state()).live)

    async def _trace_settings(self) -> tuple[Redactor, float]:
        state = await self.config.dispatch_state()
        return state.redactor, float(state.live["trace_keep_days"])

    async def close(self) -> None:
        await self.config.settle()
        await self.command_rules.remembered.settle()
        await self.traces.close()
        await self.identity.tokens.settle()
        if self._meta_reader is not None:
            self._meta_reader.close()
        if self.writer is not None:
            await self.writer.aclose()
        await self.engine.dispose()


async def open_kernel(settings: Settings) -> Kernel:
    """Prepare the folders, migrate and seed the store, load the packages."""
    prepare_folders(settings)
    engine = make_engine(settings.effective_database_url)
    try:
        await check_reachable(engine)
        await upgrade(engine)
        sessions = make_sessionmaker(engine)
        await bootstrap(sessions, settings)
    except BaseException:
        await engine.dispose()
        raise
    checked = CheckedFiles(settings.private_dir / CHECKED_TOOL_FILES)
    kernel = Kernel(settings, engine, sessions, discover(settings.package_paths, checked))
    kernel.traces.start()
    return kernel


def _user_in(snapshot: ConfigSnapshot, user: str | None) -> UserInfo | None:
    """The user ``user`` names (an id or a name; None: the first owner) in ``snapshot``."""
    if user is None:
        return next((u for u in snapshot.users.values() if u.role == "owner"), None)
    return snapshot.users.get(user) or next(
        (u for u in snapshot.users.values() if u.name == user), None
    )
