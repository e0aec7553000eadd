"""The in-memory view of stored configuration, refreshed when another writer changed it.

Every configuration write bumps ``meta.config_version`` in the same transaction. Readers
check that number at most once per ``live_refresh_seconds`` and reload everything when it
moved, so live settings, tool selections and policies apply without a restart, and the hot
path of a tool call does no database I/O. The check past the interval runs in one task of its
own while requests keep the snapshot they have (:mod:`corral.kernel.background_refresh`); only
when there is none (at the start, and after a change made here, which applies at once) do
requests wait, all for one load. An interval of 0 checks before every answer. The number is
read through the store's quick read where it has one.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.background_refresh import BackgroundRefresh
from corral.live_settings import LIVE_SETTINGS, coerce_live_value, live_defaults
from corral.policy.grants import Grants
from corral.policy.sources import SourceDef, SourceGrant, SourcePolicy, parse_rights
from corral.secrets import Redactor, is_secret_name
from corral.settings import Settings
from corral.store import tables as t
from corral.tools.dispatch import DispatchState
from corral.tools.selection import AgentSelection

__all__ = ["ConfigCache", "ConfigSnapshot", "UserInfo", "bump_config_version"]

CONFIG_VERSION = "config_version"


async def bump_config_version(session: AsyncSession) -> None:
    """Mark configuration as changed; call inside the transaction that changed it."""
    await session.execute(
        update(t.Meta).where(t.Meta.key == CONFIG_VERSION).values(value=t.Meta.value + 1)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class UserInfo:
    id: str
    name: str
    role: str
    disabled: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSnapshot:
    version: int
    state: DispatchState
    roles: dict[str, Grants]
    users: dict[str, UserInfo]


def environment_secrets() -> list[str]:
    """Values of this process's secret-looking environment variables."""
    return [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= 8]


class ConfigCache:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        settings: Settings,
        read_meta: Callable[[str], Awaitable[int | None]] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._settings = settings
        self._read_meta = read_meta
        self._clock = clock
        self._snapshot: ConfigSnapshot | None = None
        self._checked = 0.0
        self._generation = 0
        """Grows with every :meth:`invalidate`: a refresh that began before one is not kept."""
        self._refreshing = asyncio.Lock()
        """Held by the load the requests without a snapshot wait for."""
        self._recheck = BackgroundRefresh("the configuration")
        self._extra_secrets: list[str] = []

    def add_secrets(self, values: list[str]) -> None:
        self._extra_secrets.extend(values)
        self.invalidate()

    @property
    def latest(self) -> ConfigSnapshot | None:
        """The snapshot last loaded, without a check (None: none since the last write); for
        a per-call check that must not await, e.g. whether any operator hook is set."""
        return self._snapshot

    def invalidate(self) -> None:
        self._snapshot = None
        self._generation += 1

    def _fresh(self) -> ConfigSnapshot | None:
        current = self._snapshot
        if current is None:
            return None
        if self._clock() - self._checked >= self._settings.live_refresh_seconds:
            return None
        return current

    async def snapshot(self) -> ConfigSnapshot:
        current = self._snapshot
        if current is not None:
            if self._clock() - self._checked < self._settings.live_refresh_seconds:
                return current
            if self._settings.live_refresh_seconds > 0:
                self._recheck.start(self._check_in_background)
                return current
        async with self._refreshing:
            while True:
                current = self._fresh()
                if current is not None:
                    return current  # refreshed while this request waited
                checked = await self._check_now()
                if checked is not None:
                    return checked

    async def checked(self) -> ConfigSnapshot:
        """The snapshot after a check of the stored version made now, whatever the refresh
        interval: for a lookup that missed in a snapshot which may predate another process's
        change (a user added by the CLI, whose token the server already accepts)."""
        async with self._refreshing:
            while True:
                checked = await self._check_now()
                if checked is not None:
                    return checked

    async def _check_now(self) -> ConfigSnapshot | None:
        """Read the version and reload on a change (under the refresh lock, or as the one
        background check); None when an invalidation made here overtook the check, whose
        result is then not kept."""
        generation, now, current = self._generation, self._clock(), self._snapshot
        version = int(await self._version() or 0)
        if current is None or version != current.version:
            async with self._sessions() as session:
                current = await self._load(session, version)
        if generation != self._generation:
            return None
        self._snapshot, self._checked = current, now
        return current

    async def _check_in_background(self) -> None:
        generation, now = self._generation, self._clock()
        if self._snapshot is None:
            return  # invalidated since: the next request loads
        try:
            await self._check_now()
        except Exception:
            if generation == self._generation:
                self._checked = now  # tried again at the next expiry, not by every request
            raise

    async def settle(self) -> None:
        """Wait for the check in flight, if any (before the store closes)."""
        await self._recheck.settle()

    async def _version(self) -> int | None:
        if self._read_meta is not None:
            return await self._read_meta(CONFIG_VERSION)
        async with self._sessions() as session:
            found = await session.scalar(select(t.Meta.value).where(t.Meta.key == CONFIG_VERSION))
        return None if found is None else int(found)

    async def dispatch_state(self) -> DispatchState:
        return (await self.snapshot()).state

    async def _load(self, session: AsyncSession, version: int) -> ConfigSnapshot:
        live: dict[str, Any] = live_defaults()
        for row in await session.scalars(select(t.LiveSetting)):
            if row.key in LIVE_SETTINGS:
                live[row.key] = coerce_live_value(row.key, row.value)
        disabled = frozenset(
            await session.scalars(
                select(t.PackageState.name).where(t.PackageState.enabled.is_(False))
            )
        )
        agents = {
            a.name: AgentSelection(
                agent=a.name,
                mode=cast(Literal["all", "custom"], a.tool_mode),
                tools_off=frozenset(a.tools_off or ()),
                allowlist=frozenset(a.allowlist or ()),
            )
            for a in await session.scalars(select(t.Agent))
        }
        grants_by_source: dict[str, list[SourceGrant]] = {}
        for right in await session.scalars(select(t.SourceRight)):
            grants_by_source.setdefault(right.source, []).append(
                SourceGrant(
                    principal_kind=cast(Literal["role", "user"], right.principal_kind),
                    principal=right.principal,
                    rights=parse_rights(right.rights),
                )
            )
        sources = [
            SourceDef(
                name=s.name,
                connector=s.connector,
                root=Path(s.root),
                grants=tuple(grants_by_source.get(s.name, ())),
            )
            for s in await session.scalars(select(t.Source))
        ]
        protected = self._settings.protected_paths()
        policy = SourcePolicy(sources, data_root=self._settings.drive_dir, protected=protected)
        roles = {r.name: Grants.of(r.features) for r in await session.scalars(select(t.Role))}
        users = {
            u.id: UserInfo(id=u.id, name=u.name, role=u.role, disabled=u.disabled)
            for u in await session.scalars(select(t.User))
        }
        state = DispatchState(
            live=live,
            disabled_packages=disabled,
            agents=agents,
            sources=policy,
            redactor=Redactor([*environment_secrets(), *self._extra_secrets]),
        )
        return ConfigSnapshot(version=version, state=state, roles=roles, users=users)
