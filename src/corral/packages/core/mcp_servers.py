"""Connected MCP servers: stored in the project, started under a clean environment, their
tools registered as the package ``mcp:<name>`` and restored when the platform opens.

A server command runs with the environment execute's commands get (an allowlist, secret-
looking names and values dropped), in a private working folder of its own, and is
restarted with back-off when it dies.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcp.types import Tool
from sqlalchemy import delete, select

from corral.connect.mcp_client import Backoff, McpConnection, McpState
from corral.errors import InvalidArguments, ToolError
from corral.kernel import Kernel
from corral.packages.core.mcp_package import build_package, package_name
from corral.shell.environment import build_environment
from corral.store import connect_tables as ct

__all__ = ["McpServerView", "McpServers"]

log = logging.getLogger("corral.connect.mcp")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerView:
    """What may be shown of a connected server: no command, paths, environment or creator."""

    name: str
    state: McpState
    trusted: bool
    tools: tuple[str, ...]
    left_out: tuple[str, ...]
    """Tools the contract refused, each with its reason."""
    problem: str


class McpServers:
    """The project's MCP servers and their live connections."""

    def __init__(self, kernel: Kernel, *, backoff: Backoff | None = None) -> None:
        self._kernel = kernel
        self._backoff = backoff
        self._connections: dict[str, McpConnection] = {}
        self._trusted: dict[str, bool] = {}
        self._unstarted: dict[str, str] = {}
        """Stored servers that did not start when the platform opened, with the reason."""

    @property
    def _root(self) -> Path:
        return self._kernel.settings.private_dir / "mcp"

    def check_command(self, command: list[str]) -> None:
        """Refuse a command that cannot start, before anything is written."""
        if not command or not command[0].strip():
            raise InvalidArguments("an mcp server needs 'command': the program and its arguments")
        if "\x00" in "".join(command):
            raise InvalidArguments("the mcp command holds a NUL character")
        if shutil.which(command[0]) is None:
            raise InvalidArguments(
                f"program {command[0]!r} of the mcp command is not found or not executable; "
                "give its absolute path or a program on the platform's PATH"
            )

    def names(self) -> list[str]:
        return sorted({*self._connections, *self._unstarted})

    def connection(self, name: str) -> McpConnection | None:
        return self._connections.get(name)

    def view(self, name: str) -> McpServerView | None:
        connection = self._connections.get(name)
        if connection is None:
            if name not in self._unstarted:
                return None
            return McpServerView(
                name=name,
                state="down",
                trusted=self._trusted.get(name, False),
                tools=(),
                left_out=(),
                problem=self._unstarted[name],
            )
        package = self._kernel.registry.packages.get(package_name(name))
        return McpServerView(
            name=name,
            state=connection.state,
            trusted=self._trusted.get(name, False),
            tools=tuple(sorted(package.tools)) if package else (),
            left_out=tuple(f"{e.file}: {e.message}" for e in package.errors) if package else (),
            problem=connection.last_error,
        )

    async def add(
        self, name: str, command: list[str], *, trusted: bool, created_by: str
    ) -> McpServerView:
        """Start the server; only a server that connected is stored and registered."""
        if name in self._connections:
            raise InvalidArguments(
                f"an mcp server named {name!r} is already connected; remove it first or pick "
                "another name"
            )
        self.check_command(command)
        await self._connect(name, command, trusted=trusted)
        async with self._kernel.sessions.begin() as session:
            session.add(
                ct.McpServer(
                    name=name,
                    transport="stdio",
                    command=command,
                    fields={},
                    trusted=trusted,
                    created_by=created_by,
                )
            )
        view = self.view(name)
        assert view is not None
        return view

    async def remove(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        self._trusted.pop(name, None)
        self._unstarted.pop(name, None)
        self._kernel.registry.drop(package_name(name))
        if connection is not None:
            await connection.close()
        async with self._kernel.sessions.begin() as session:
            await session.execute(delete(ct.McpServer).where(ct.McpServer.name == name))

    async def restore(self) -> None:
        """Start every stored server; one that fails stays listed as down with its reason."""
        async with self._kernel.sessions() as session:
            rows = list(await session.scalars(select(ct.McpServer)))
        for row in rows:
            try:
                await self._connect(row.name, list(row.command), trusted=row.trusted)
            except ToolError as exc:
                log.warning("MCP server %r was not restored: %s", row.name, exc.message)
                self._unstarted[row.name] = exc.message
                self._trusted[row.name] = row.trusted

    async def close(self) -> None:
        for name in list(self._connections):
            connection = self._connections.pop(name)
            await connection.close()

    async def _connect(self, name: str, command: list[str], *, trusted: bool) -> None:
        home = self._root / name
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        env = build_environment(platform_env=os.environ, home=str(home))

        def on_tools(tools: list[Tool]) -> None:
            registry = self._kernel.registry
            registry.drop(package_name(name))
            registry.add(build_package(name, connection, tools, trusted=trusted))

        connection = McpConnection(
            name,
            command,
            env=env.values,
            cwd=home,
            errlog=home / "stderr.log",
            on_tools=on_tools,
            backoff=self._backoff,
        )
        await connection.start()
        self._connections[name] = connection
        self._trusted[name] = trusted
