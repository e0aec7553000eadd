"""``/mcp``: Corral's tools over MCP's streamable HTTP, for the user a bearer token belongs to.

Every request must carry ``Authorization: Bearer <token>`` (a token from ``corral tokens
create``); a missing, unknown or revoked token is a 401 with a JSON body saying what to send,
before the SDK sees the request. The token's user is handed to the SDK as its authenticated
user, so an MCP session can only be continued with the credential that opened it, and each
call runs through the one dispatch pipeline as that user under the ``mcp_http_profile`` live
setting (default balanced: a call that needs approval returns a pending result with its
approval id, see :mod:`corral.server.mcp_bridge`).

Before the token is looked at, ``Host`` and ``Origin`` must name this server (loopback or the
configured ``public_url``, see :mod:`corral.server.mcp_origin`): a page whose name was rebound
to this address gets a 403 saying which header was refused, as MCP's transport specification
asks. The SDK's own check stays off: it answers 421 and knows neither ``public_url`` nor
that any loopback port is this server.

A session ends when the client deletes it (``DELETE`` with its ``Mcp-Session-Id``), when it
stays idle past the SDK's timeout, or when the server stops; the operator's ``SessionEnd``
hooks then hear it once, with that ``Mcp-Session-Id`` as ``session_id``. Only a session the
server opened (its initialize answered with a session id) ends: a refused opening never
began. The server's stop waits for those hooks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from corral.kernel.tokens import hash_token
from corral.platform import Platform
from corral.policy.identity import Caller
from corral.policy.profiles import Profile, parse_profile
from corral.server.mcp_bridge import build_mcp_server, session_ended
from corral.server.mcp_origin import AllowedHosts

__all__ = ["McpEndpoint"]

_HOW = "send 'Authorization: Bearer <token>'; create one with `corral tokens create USER`"


class _EndingSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, telling ``on_end`` the id of each session it lets go
    (deleted, idle, crashed or stopped)."""

    def __init__(self, app: Server[Any], on_end: Callable[[str], None]) -> None:
        super().__init__(
            app, security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._on_end = on_end

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        # The SDK has no public "session closed" callback; every way a session ends
        # passes here (possibly twice, hence the caller's once-only bookkeeping).
        await super()._discard_session(session_id, transport)
        self._on_end(session_id)


class McpEndpoint:
    """The ASGI app behind ``/mcp``; :meth:`running` must wrap the server's lifetime."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._manager = _EndingSessions(
            build_mcp_server(platform, self._who, _session_id), self._session_ended
        )
        self._opened: set[str] = set()
        self._ending: set[asyncio.Task[None]] = set()
        settings = platform.kernel.settings
        self._hosts = AllowedHosts(public_url=settings.public_url, bind_host=settings.host)
        self._running = False

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve MCP sessions while inside; they all end when it is left."""
        try:
            async with self._manager.run():
                self._running = True
                try:
                    yield
                finally:
                    self._running = False
        finally:
            if self._ending:
                await asyncio.gather(*self._ending, return_exceptions=True)

    def _session_ended(self, session_id: str) -> None:
        if session_id not in self._opened:
            return  # never opened, or already heard
        self._opened.discard(session_id)
        # Its own task: the manager may be discarding the session while being cancelled.
        task = asyncio.create_task(session_ended(self._platform, session_id))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    def _noting_openings(self, send: Send) -> Send:
        """``send``, noting the session id an answered initialize hands out."""

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        self._opened.add(value.decode("latin-1"))
            await send(message)

        return noting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        refused = self._hosts.refusal(scope)
        if refused is not None:
            answer = JSONResponse({"detail": refused, "code": "forbidden_origin"}, status_code=403)
            await answer(scope, receive, send)
            return
        user_id = await self._authenticate(scope)
        if user_id is None:
            answer = JSONResponse(
                {"detail": _HOW, "code": "unauthenticated"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await answer(scope, receive, send)
            return
        if not self._running:
            busy = JSONResponse(
                {"detail": "the MCP endpoint is not running; start the server with its lifespan"},
                status_code=503,
            )
            await busy(scope, receive, send)
            return
        # Only the hash travels with the request: the SDK compares principals, not secrets.
        principal = AccessToken(token=_token_id(scope), client_id=user_id, scopes=[])
        await self._manager.handle_request(
            {**scope, "user": AuthenticatedUser(principal)}, receive, self._noting_openings(send)
        )

    async def _authenticate(self, scope: Scope) -> str | None:
        token = _bearer(scope)
        if not token:
            return None
        return await self._platform.identity.user_for_token(token)

    async def _who(self, ctx: Any) -> tuple[Caller, Profile]:
        request = getattr(ctx, "request", None)
        user = request.scope.get("user") if request is not None else None
        if not isinstance(user, AuthenticatedUser):
            # Only reachable if the SDK stopped passing the HTTP request: refuse, never guess.
            raise PermissionError("no authenticated caller on this MCP request")
        settings = await self._platform.kernel.live_settings()
        caller = await self._platform.caller(user.access_token.client_id)
        return caller, parse_profile(str(settings["mcp_http_profile"]))


def _bearer(scope: Scope) -> str:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


def _token_id(scope: Scope) -> str:
    return hash_token(_bearer(scope))


def _session_id(ctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` the SDK checked against the session's credential."""
    request = getattr(ctx, "request", None)
    if request is None:
        return None
    found = request.headers.get("mcp-session-id")
    return str(found) if found else None
