"""Configuration writes: live settings, sources and their rights, agents' tool selection,
package state. Each write is one transaction that also bumps the configuration version."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, UsageError
from corral.kernel.config import ConfigCache, bump_config_version
from corral.live_settings import LIVE_SETTINGS, coerce_live_value
from corral.policy.sources import ACCESS_LETTERS, parse_rights
from corral.store import tables as t

__all__ = ["Admin"]

T = TypeVar("T")
_SOURCE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
CONNECTORS = ("local", "host")


class Admin:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        config: ConfigCache,
        known_tools: Callable[[], set[str]],
        known_packages: Callable[[], set[str]],
    ) -> None:
        self._sessions = sessions
        self._config = config
        self._known_tools = known_tools
        self._known_packages = known_packages
        self._live_checks: dict[str, Callable[[Any], None]] = {}

    def check_live(self, key: str, check: Callable[[Any], None]) -> None:
        """Have ``check`` judge every new value of live setting ``key`` before it is saved
        (raising :class:`UsageError` with the reason); the layer that reads the setting
        provides it, e.g. the hook engine for ``hooks``."""
        if key not in LIVE_SETTINGS:
            raise NotFound(f"no live setting named {key!r}")
        self._live_checks[key] = check

    async def _write(self, change: Callable[[AsyncSession], Awaitable[T]]) -> T:
        async with self._sessions.begin() as session:
            outcome = await change(session)
            await bump_config_version(session)
        self._config.invalidate()
        return outcome

    # -- live settings ----------------------------------------------------------------------

    async def set_live(self, key: str, value: Any, *, by: str | None = None) -> Any:
        checked = coerce_live_value(key, value)
        if (check := self._live_checks.get(key)) is not None:
            check(checked)

        async def change(session: AsyncSession) -> Any:
            row = await session.get(t.LiveSetting, key)
            if row is None:
                session.add(t.LiveSetting(key=key, value=checked, updated_by=by))
            else:
                row.value, row.updated_by, row.updated_at = checked, by, t.utcnow()
            return checked

        return await self._write(change)

    async def reset_live(self, key: str) -> None:
        if key not in LIVE_SETTINGS:
            raise NotFound(f"no live setting named {key!r}")

        async def change(session: AsyncSession) -> None:
            await session.execute(delete(t.LiveSetting).where(t.LiveSetting.key == key))

        await self._write(change)

    # -- sources ----------------------------------------------------------------------------

    async def add_source(
        self, name: str, root: str, *, connector: str = "local", description: str = ""
    ) -> None:
        if not _SOURCE_NAME.match(name):
            raise UsageError(
                f"source name {name!r} must be lower case letters, digits, '_' or '-' "
                "(it is used as a URI scheme: name://path)"
            )
        if connector not in CONNECTORS:
            raise UsageError(f"unknown connector {connector!r}; use one of {CONNECTORS}")
        if not Path(root).is_absolute():
            raise UsageError(f"source root {root!r} must be an absolute path")

        async def change(session: AsyncSession) -> None:
            if await session.get(t.Source, name) is not None:
                raise UsageError(f"a source named {name!r} already exists")
            session.add(
                t.Source(name=name, root=root, connector=connector, description=description)
            )

        await self._write(change)

    async def grant_source(
        self,
        source: str,
        *,
        principal_kind: Literal["role", "user"],
        principal: str,
        rights: str,
    ) -> None:
        """Set (replace) the rights a role or user holds on a source; "" removes them."""
        try:
            granted = parse_rights(rights)
            letters = "".join(k for k, v in ACCESS_LETTERS.items() if v in granted)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

        async def change(session: AsyncSession) -> None:
            if await session.get(t.Source, source) is None:
                raise NotFound(f"no source {source!r}; `corral sources list` shows them")
            existing = await session.scalar(
                select(t.SourceRight).where(
                    t.SourceRight.source == source,
                    t.SourceRight.principal_kind == principal_kind,
                    t.SourceRight.principal == principal,
                )
            )
            if not letters:
                if existing is not None:
                    await session.delete(existing)
            elif existing is None:
                session.add(
                    t.SourceRight(
                        source=source,
                        principal_kind=principal_kind,
                        principal=principal,
                        rights=letters,
                    )
                )
            else:
                existing.rights = letters

        await self._write(change)

    async def remove_source(self, name: str) -> None:
        async def change(session: AsyncSession) -> None:
            row = await session.get(t.Source, name)
            if row is None:
                raise NotFound(f"no source {name!r}")
            await session.execute(delete(t.SourceRight).where(t.SourceRight.source == name))
            await session.delete(row)

        await self._write(change)

    # -- agents and tool selection ------------------------------------------------------------

    async def ensure_agent(self, name: str, **fields: Any) -> None:
        async def change(session: AsyncSession) -> None:
            row = await session.get(t.Agent, name)
            if row is None:
                session.add(t.Agent(name=name, **fields))
            else:
                for key, value in fields.items():
                    setattr(row, key, value)
                row.updated_at = t.utcnow()

        await self._write(change)

    async def set_tool_enabled(self, agent: str, tool: str, enabled: bool) -> None:
        """Switch one tool on or off for an agent without leaving its current mode."""
        self._require_tools([tool])

        async def change(session: AsyncSession) -> None:
            row = await self._agent(session, agent)
            if row.tool_mode == "custom":
                names = set(row.allowlist or ())
                names = names | {tool} if enabled else names - {tool}
                row.allowlist = sorted(names)
            else:
                off = set(row.tools_off or ())
                off = off - {tool} if enabled else off | {tool}
                row.tools_off = sorted(off)
            row.updated_at = t.utcnow()

        await self._write(change)

    async def set_custom_tools(self, agent: str, tools: list[str]) -> None:
        """Leave all mode: freeze exactly these tools as the agent's allowlist."""
        self._require_tools(tools)

        async def change(session: AsyncSession) -> None:
            row = await self._agent(session, agent)
            row.tool_mode, row.allowlist, row.tools_off = "custom", sorted(set(tools)), []
            row.updated_at = t.utcnow()

        await self._write(change)

    async def set_pinned_tools(self, agent: str, tools: list[str]) -> None:
        """Tools ``agent`` always gets in full, never deferred by tool_search (empty: none).
        Pinning shows a tool; it never makes one visible that the caller cannot see."""
        self._require_tools(tools)

        async def change(session: AsyncSession) -> None:
            row = await self._agent(session, agent)
            row.pinned_tools, row.updated_at = sorted(set(tools)), t.utcnow()

        await self._write(change)

    async def pinned_tools(self, agent: str) -> list[str]:
        async with self._sessions() as session:
            return list((await self._agent(session, agent)).pinned_tools or ())

    async def set_all_tools(self, agent: str) -> None:
        """Back to all mode (every visible tool, none switched off)."""

        async def change(session: AsyncSession) -> None:
            row = await self._agent(session, agent)
            row.tool_mode, row.allowlist, row.tools_off = "all", [], []
            row.updated_at = t.utcnow()

        await self._write(change)

    async def set_package_enabled(self, package: str, enabled: bool) -> None:
        if package not in self._known_packages():
            raise NotFound(f"no package {package!r}; `corral tools list` shows packages")

        async def change(session: AsyncSession) -> None:
            row = await session.get(t.PackageState, package)
            if row is None:
                session.add(t.PackageState(name=package, enabled=enabled))
            else:
                row.enabled, row.updated_at = enabled, t.utcnow()

        await self._write(change)

    async def _agent(self, session: AsyncSession, name: str) -> t.Agent:
        row = await session.get(t.Agent, name)
        if row is None:
            raise NotFound(f"no agent {name!r}; `corral agents list` shows them")
        return row

    def _require_tools(self, tools: list[str]) -> None:
        unknown = sorted(set(tools) - self._known_tools())
        if unknown:
            raise NotFound(
                f"no tool named {', '.join(map(repr, unknown))}; `corral tools list` shows them"
            )
