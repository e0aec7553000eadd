"""Connected MCP servers: stored in the project, started under a clean environment, their
tools registered as the package ``mcp:<name>`` and restored when the platform opens.

A server command runs with the environment execute's commands get (an allowlist, secret-
looking names and values dropped), in a working folder of its own (:mod:`.mcp_home`), and is
restarted with back-off when it dies. It starts through :mod:`corral.shell.launcher`: as
root it runs as the sandbox uid with no groups, and always with ``no_new_privs`` and the
sandbox's seccomp filter (no set-id files, namespaces or ptrace; the network stays).

A server over streamable HTTP is reached only through the hardened fetch path's address
rules (an administrator may allow its own private host), and one that wants OAuth waits,
``authorizing``, until a person opened the URL :meth:`McpServers.authorization_url` gives
and the callback route handed the code to :meth:`McpServers.complete_authorization`; its
tokens are a project credential.

A server's log (``private/mcp/<name>/stderr.log``) holds its stderr, the log messages it
sends over MCP and what the client noted about it (a refused sampling request, a tool list
that changed).
"""

from __future__ import annotations

import io
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sqlalchemy import delete, select

from corral.connect import CredentialStore
from corral.connect.mcp_client import Backoff, McpConnection, McpState, Opener, stdio_opener
from corral.connect.mcp_roots import Roots
from corral.errors import InvalidArguments, ToolError
from corral.files import open_for_append
from corral.kernel import Kernel
from corral.packages.core.mcp_home import server_home
from corral.packages.core.mcp_package import build_package, package_name, warnings
from corral.shell.environment import build_environment
from corral.shell.launcher import launcher_argv
from corral.store import connect_tables as ct
from corral.web.access import WebAccess

if TYPE_CHECKING:  # the SDK and its HTTP client load only once a server over HTTP is in use
    from mcp.types import Tool

    from corral.connect.mcp_remote import OAuthHandoff
    from corral.shell.egress.helpers import HelperNetwork

__all__ = ["CALLBACK_PATH", "McpServerSpec", "McpServerView", "McpServers"]

CALLBACK_PATH = "/connect/oauth/callback"
_LAUNCHER_SAYS = "corral launcher:"
_LOG_TAIL = 64_000


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerSpec:
    """How to reach a server: a stdio ``command`` or an HTTP ``url``."""

    name: str
    command: tuple[str, ...] = ()
    url: str = ""
    trusted: bool = False
    private_host: bool = False
    """An administrator allowed the URL's host even though it resolves to a private address."""
    sampling: bool = False
    """An administrator lets the server ask the calling run's model for completions."""
    folder: str = ""
    """A stdio server's working folder when an administrator runs it in a local source
    (its calls to tools not read-only then keep checkpoints); else its own home."""
    created_by: str = ""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


log = logging.getLogger("corral.connect.mcp")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerView:
    """What may be shown of a connected server: no command, paths, environment or creator."""

    name: str
    state: McpState
    transport: str
    trusted: bool
    tools: tuple[str, ...]
    left_out: tuple[str, ...]
    """Tools whose schema cannot be used, each with its reason."""
    problem: str
    warnings: tuple[str, ...] = ()
    """What is usable but imperfect (properties the server does not describe)."""
    prompts: tuple[str, ...] = ()
    resources: int = 0
    resource_templates: int = 0


class McpServers:
    """The project's MCP servers and their live connections."""

    def __init__(
        self,
        kernel: Kernel,
        *,
        credentials: CredentialStore | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self._kernel = kernel
        self._credentials = credentials
        self._backoff = backoff
        self._connections: dict[str, McpConnection] = {}
        self._handoffs: dict[str, OAuthHandoff] = {}
        self._specs: dict[str, McpServerSpec] = {}
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
                transport=self._specs[name].transport if name in self._specs else "stdio",
                trusted=self._trusted.get(name, False),
                tools=(),
                left_out=(),
                problem=self._unstarted[name],
            )
        package = self._kernel.registry.packages.get(package_name(name))
        return McpServerView(
            name=name,
            state=connection.state,
            transport=self._specs[name].transport,
            trusted=self._trusted.get(name, False),
            tools=tuple(sorted(package.tools)) if package else (),
            left_out=tuple(f"{e.file}: {e.message}" for e in package.errors) if package else (),
            problem=connection.last_error,
            warnings=tuple(warnings(connection.tools)),
            prompts=tuple(sorted(p.name for p in connection.prompts)),
            resources=len(connection.resources),
            resource_templates=len(connection.resource_templates),
        )

    def callback_url(self) -> str:
        """Where an authorization server sends a person's browser back: ``public_url``, else
        ``http://host:port``."""
        settings = self._kernel.settings
        public = settings.public_url or f"http://{settings.host}:{settings.port}"
        return public.rstrip("/") + CALLBACK_PATH

    def check_callback(self) -> None:
        """Refuse to hand a person a link whose redirect no browser can follow."""
        settings = self._kernel.settings
        if not settings.public_url and settings.host in ("", "0.0.0.0", "::", "[::]"):
            raise ToolError(
                f"the OAuth callback URL is not set: the server binds {settings.host!r}, an "
                "address no browser can open. Set public_url (CORRAL_PUBLIC_URL, or public_url "
                "in corral.toml) to the address people's browsers reach this server at, e.g. "
                "https://corral.example.org, and try again",
                code="public_url_unset",
            )

    def check_url(self, url: str) -> None:
        """Refuse a URL that cannot be an MCP endpoint, before anything is written."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidArguments(
                f"the mcp url {url!r} is not an http(s) URL with a host; give the server's "
                "streamable-HTTP endpoint, e.g. https://mcp.example.org/mcp"
            )
        if parts.username or parts.password:
            raise InvalidArguments(
                "the mcp url must not carry a user or password; connect with OAuth (authorize) "
                "or store a credential"
            )

    async def add(self, spec: McpServerSpec, *, roots: Roots = ()) -> McpServerView:
        """Connect the server, telling it ``roots`` (those of the person adding it) until a
        call says others; only one that connected (or waits for authorization) is stored
        and registered."""
        name = spec.name
        if name in self._connections:
            raise InvalidArguments(
                f"an mcp server named {name!r} is already connected; remove it first or pick "
                "another name"
            )
        if spec.url:
            self.check_url(spec.url)
        else:
            self.check_command(list(spec.command))
        await self._connect(spec, roots=roots)
        fields: dict[str, Any] = (
            {"url": spec.url, "privateHost": spec.private_host} if spec.url else {}
        )
        if spec.sampling:
            fields["sampling"] = True
        if spec.folder:
            fields["folder"] = spec.folder
        async with self._kernel.sessions.begin() as session:
            session.add(
                ct.McpServer(
                    name=name,
                    transport=spec.transport,
                    command=list(spec.command),
                    fields=fields,
                    trusted=spec.trusted,
                    created_by=spec.created_by,
                )
            )
        view = self.view(name)
        assert view is not None
        return view

    def authorization_url(self, name: str) -> str | None:
        """The URL a person must open for ``name`` to finish connecting, if it waits for one."""
        handoff = self._handoffs.get(name)
        connection = self._connections.get(name)
        if handoff is None or connection is None or connection.state != "authorizing":
            return None
        return handoff.url

    async def complete_authorization(
        self, *, state: str, code: str = "", iss: str | None = None, error: str = ""
    ) -> McpServerView | None:
        """Hand an authorization code (or the server's ``error``) to the server waiting with
        ``state``; returns its view once it connected (or failed), None when no server waits
        with that state."""
        for name, handoff in self._handoffs.items():
            connection = self._connections.get(name)
            if connection is None or connection.state != "authorizing":
                continue
            before = connection.connections
            answered = (
                handoff.refuse(state=state, reason=error)
                if error
                else handoff.complete(state=state, code=code, iss=iss)
            )
            if answered:
                connection.authorized()
                await connection.wait_settled(connected_at_least=before + 1)
                return self.view(name)
        return None

    async def remove(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        spec = self._specs.pop(name, None)
        self._handoffs.pop(name, None)
        self._trusted.pop(name, None)
        self._unstarted.pop(name, None)
        self._kernel.registry.drop(package_name(name))
        if connection is not None:
            await connection.close()
        async with self._kernel.sessions.begin() as session:
            await session.execute(delete(ct.McpServer).where(ct.McpServer.name == name))
        if spec is not None and spec.url and self._credentials is not None:
            from corral.connect.mcp_remote import oauth_credential_name

            found = await self._credentials.entry(
                oauth_credential_name(name), user_id=spec.created_by, scope="project"
            )
            if found is not None:
                await self._credentials.remove(
                    oauth_credential_name(name), user_id=spec.created_by, scope="project"
                )

    async def restore(self) -> None:
        """Start every stored server; one that fails stays listed as down with its reason."""
        async with self._kernel.sessions() as session:
            rows = list(await session.scalars(select(ct.McpServer)))
        for row in rows:
            fields = dict(row.fields or {})
            spec = McpServerSpec(
                name=row.name,
                command=tuple(row.command),
                url=str(fields.get("url", "")),
                trusted=row.trusted,
                private_host=bool(fields.get("privateHost", False)),
                sampling=bool(fields.get("sampling", False)),
                folder=str(fields.get("folder", "")),
                created_by=row.created_by,
            )
            self._specs[row.name] = spec
            try:
                await self._connect(spec)
            except ToolError as exc:
                log.warning("MCP server %r was not restored: %s", row.name, exc.message)
                self._unstarted[row.name] = exc.message
                self._trusted[row.name] = row.trusted

    async def close(self) -> None:
        for name in list(self._connections):
            connection = self._connections.pop(name)
            await connection.close()

    async def _connect(self, spec: McpServerSpec, *, roots: Roots = ()) -> None:
        name, trusted = spec.name, spec.trusted

        def on_tools(tools: list[Tool]) -> None:
            registry = self._kernel.registry
            registry.drop(package_name(name))
            registry.add(
                build_package(
                    name,
                    connection,
                    tools,
                    trusted=trusted,
                    folder=Path(spec.folder) if spec.folder and not spec.url else None,
                )
            )

        opener = self._http_opener(spec, lambda: connection) if spec.url else None
        connection = McpConnection(
            name,
            opener or self._stdio_opener(spec),
            on_tools=on_tools,
            on_log=lambda line: self._log(name, line),
            roots=roots,
            backoff=self._backoff,
            allow_sampling=spec.sampling,
        )
        self._specs[name] = spec
        errlog = self._errlog(name)
        since = _size(errlog)
        try:
            await connection.start()
        except ToolError as exc:
            refusal = "" if spec.url else _launcher_refusal(errlog, since)
            if not refusal:
                raise
            raise ToolError(f"{exc.message} ({refusal})", code=exc.code) from None
        self._connections[name] = connection
        self._trusted[name] = trusted

    def _stdio_opener(self, spec: McpServerSpec) -> Opener:
        settings = self._kernel.settings
        uid = settings.sandbox_uid if os.geteuid() == 0 else None
        home = server_home(settings.data_dir / "mcp", spec.name, uid=uid)
        env = build_environment(platform_env=os.environ, home=str(home))
        command = launcher_argv(spec.command, uid=settings.sandbox_uid)
        return stdio_opener(
            command,
            env=env.values,
            cwd=Path(spec.folder) if spec.folder else home,
            errlog=self._errlog(spec.name),
            network=self._network,
        )

    async def _network(self) -> HelperNetwork | None:
        """A stdio server's network: the shell's egress policy (see ShellService)."""
        from corral.shell.service import ShellService  # built on first need

        shells = self._kernel.services.get(ShellService)
        return None if shells is None else await shells.helper_network(handoff="path")

    def _log(self, name: str, line: str) -> None:
        """A line of the server's own log messages (or of the client about it) in its log."""
        errlog = self._errlog(name)
        try:
            errlog.parent.mkdir(parents=True, exist_ok=True)
            raw = open_for_append(errlog.parent, errlog, mode=0o600)
            with io.BufferedWriter(raw) as sink:
                sink.write(f"{line}\n".encode(errors="replace"))
        except OSError as exc:
            log.warning("MCP server %r: its log cannot be written: %s", name, exc)

    def _errlog(self, name: str) -> Path:
        """The server's stderr, kept where only the platform writes (never its home)."""
        return self._root / name / "stderr.log"

    def _http_opener(self, spec: McpServerSpec, connection: Callable[[], McpConnection]) -> Opener:
        web = self._kernel.services.web
        access = web if isinstance(web, WebAccess) else WebAccess()
        own_host = urlsplit(spec.url).hostname

        async def resolve(host: str, port: int) -> Sequence[IPv4Address | IPv6Address]:
            return await access.resolver.resolve(host, port)

        def refusal(host: str, address: IPv4Address | IPv6Address) -> str | None:
            why = access.addresses.refusal(address)
            if why is not None and spec.private_host and host == own_host:
                return None  # the administrator's allowance: this server's own host only
            return why

        from corral.connect.mcp_remote import (
            CredentialTokens,
            GuardedBackend,
            OAuthHandoff,
            http_streams,
        )

        auth = None
        if self._credentials is not None:
            handoff = OAuthHandoff(lambda: connection().authorizing(), watch=_Watch(connection))
            self._handoffs[spec.name] = handoff
            auth = handoff.provider(
                spec.url,
                CredentialTokens(self._credentials, spec.name, owner=spec.created_by),
                redirect_uri=self.callback_url(),
                client_name=f"Corral ({spec.name})",
                server_name=spec.name,
            )
        backend = GuardedBackend(resolve, refusal)
        return lambda: http_streams(spec.url, backend, auth)


@dataclass(frozen=True, slots=True)
class _Watch:
    """The provider's view of the connection it authorizes (built after the provider)."""

    connection: Callable[[], McpConnection]

    def may_wait_for_person(self) -> bool:
        return self.connection().may_wait_for_person()

    def authorization_lost(self, why: str) -> None:
        self.connection().authorization_lost(why)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _launcher_refusal(errlog: Path, since: int) -> str:
    """Why the launcher refused to start the server, from what it logged after ``since``."""
    try:
        with errlog.open("rb") as log_file:
            log_file.seek(since)
            written = log_file.read(_LOG_TAIL).decode("utf-8", errors="replace")
    except OSError:
        return ""
    said = [line for line in written.splitlines() if line.startswith(_LAUNCHER_SAYS)]
    return said[-1] if said else ""
