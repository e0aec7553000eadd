"""MCP servers over streamable HTTP: the guarded network path and the OAuth hand-off.

:class:`GuardedBackend` is the only way the SDK's HTTP client reaches the network: every
connection resolves the host, judges each address with the platform's address rules (those of
the hardened fetch path, handed in as callables so this layer does not import ``web``) and
connects to an address it accepted. TLS is started by the pool with the URL's host name, so
SNI and certificate checks keep the original name.

:class:`OAuthHandoff` adapts the SDK's OAuth 2.1 + PKCE client to a person in a browser: the
SDK's redirect handler parks the authorization URL (for the card and the CLI, never the
model) and its callback handler waits until the platform's callback route hands in the code.
:class:`CredentialTokens` keeps the tokens and the client registration as one project
credential, so refreshing needs neither the model nor a person.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import httpcore2
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from corral.connect.credentials import CredentialStore

if TYPE_CHECKING:
    from corral.connect.mcp_oauth import AuthorizationWatch

__all__ = [
    "CredentialTokens",
    "GuardedBackend",
    "OAuthHandoff",
    "http_streams",
    "oauth_credential_name",
]

IPAddress = IPv4Address | IPv6Address
Resolve = Callable[[str, int], Awaitable[Sequence[IPAddress]]]
Refusal = Callable[[str, IPAddress], "str | None"]
"""Why a connection to an address of a host is refused, or None."""


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP connections only to addresses ``refusal`` has no objection to."""

    def __init__(self, resolve: Resolve, refusal: Refusal) -> None:
        self._resolve = resolve
        self._refusal = refusal
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's backend interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        reasons: list[str] = []
        for address in await self._resolve(host, port):
            why = self._refusal(host, address)
            if why is None:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            reasons.append(f"{address} is {why}")
        raise httpcore2.ConnectError(
            f"connection to {host!r} refused: {'; '.join(reasons) or 'no address'}"
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's backend interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("MCP over HTTP never uses unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _guarded_transport(backend: GuardedBackend) -> httpx2.AsyncHTTPTransport:
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # httpx2 takes no network backend; its pool does. Same pool settings, our backend.
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=httpx2.create_ssl_context(trust_env=False), network_backend=backend
    )
    return transport


def http_streams(
    url: str, backend: GuardedBackend, auth: httpx2.Auth | None
) -> AbstractAsyncContextManager[Any]:
    """The SDK's streamable-HTTP transport over the guarded backend, with ``auth``."""
    client = httpx2.AsyncClient(
        transport=_guarded_transport(backend),
        auth=auth,
        trust_env=False,
        timeout=httpx2.Timeout(30.0, read=300.0),
    )
    return _with_client(url, client)


class _with_client:
    def __init__(self, url: str, client: httpx2.AsyncClient) -> None:
        self._client = client
        self._inner = streamable_http_client(url, http_client=client)

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._inner.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


def oauth_credential_name(server: str) -> str:
    """The project credential holding ``server``'s OAuth tokens."""
    return f"mcp-{server}-oauth"


class CredentialTokens:
    """The SDK's ``TokenStorage`` over one encrypted project credential.

    Beside the tokens it keeps ``expiresAt``: when the access token expires, computed from
    ``expires_in`` when the token arrived, so a restarted platform knows it (see
    :mod:`corral.connect.mcp_oauth`). A refreshed token, and a rotated refresh token with it,
    replaces the stored one."""

    def __init__(
        self,
        store: CredentialStore,
        server: str,
        *,
        owner: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._name = oauth_credential_name(server)
        self._owner = owner
        self._clock = clock

    async def _read(self) -> dict[str, Any]:
        raw = await self._store.lookup(self._name, user_id=self._owner)
        return dict(json.loads(raw)) if raw else {}

    async def _write(self, changes: dict[str, Any]) -> None:
        stored = await self._read() | changes
        secret_parts = [
            str(v)
            for v in (
                stored.get("tokens", {}).get("access_token"),
                stored.get("tokens", {}).get("refresh_token"),
                stored.get("client", {}).get("client_secret"),
            )
            if v
        ]
        self._store.remember(secret_parts)
        await self._store.set(
            self._name,
            json.dumps(stored),
            user_id=self._owner,
            scope="project",
            provider="mcp-oauth",
        )

    async def get_tokens(self) -> OAuthToken | None:
        tokens = (await self._read()).get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        lifetime = tokens.expires_in
        await self._write(
            {
                "tokens": tokens.model_dump(mode="json", exclude_none=True),
                "expiresAt": None if lifetime is None else self._clock() + int(lifetime),
            }
        )

    async def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if known."""
        expiry = (await self._read()).get("expiresAt")
        return float(expiry) if expiry is not None else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = (await self._read()).get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._write({"client": client_info.model_dump(mode="json", exclude_none=True)})


@dataclass(slots=True)
class _Pending:
    url: str
    state: str
    answer: asyncio.Future[AuthorizationCodeResult]


class OAuthHandoff:
    """Hands the SDK's authorization step to a person and back.

    ``on_needed`` hears when a person must open :attr:`url`; :meth:`complete` is what the
    callback route calls with the redirect's parameters. ``watch`` says whether a person may
    be waited for now and hears when the stored authorization is lost."""

    def __init__(self, on_needed: Callable[[], None], *, watch: AuthorizationWatch) -> None:
        self._on_needed = on_needed
        self._watch = watch
        self._pending: _Pending | None = None

    @property
    def url(self) -> str | None:
        """The authorization URL waiting for a person, if any."""
        return self._pending.url if self._pending and not self._pending.answer.done() else None

    @property
    def state(self) -> str | None:
        return self._pending.state if self._pending else None

    def provider(
        self,
        server_url: str,
        storage: CredentialTokens,
        *,
        redirect_uri: str,
        client_name: str,
        server_name: str,
    ) -> OAuthClientProvider:
        from corral.connect.mcp_oauth import RefreshingOAuth  # imports the SDK's OAuth client

        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(redirect_uri)],
            client_name=client_name,
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        return RefreshingOAuth(
            server_url,
            metadata,
            storage,
            watch=self._watch,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            server_name=server_name,
        )

    def complete(self, *, state: str, code: str, iss: str | None = None) -> bool:
        """Hand in the code the authorization server redirected with; False when ``state``
        matches no authorization in progress here."""
        pending = self._waiting_for(state)
        if pending is None:
            return False
        pending.answer.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))
        return True

    def refuse(self, *, state: str, reason: str) -> bool:
        """The authorization server answered the person with an error: end the wait."""
        pending = self._waiting_for(state)
        if pending is None:
            return False
        pending.answer.set_exception(OAuthFlowError(f"authorization refused: {reason}"))
        return True

    def _waiting_for(self, state: str) -> _Pending | None:
        """The authorization still waiting whose ``state`` is this one, if any."""
        pending = self._pending
        if (
            pending is None
            or pending.answer.done()
            or not secrets.compare_digest(pending.state.encode(), state.encode())
        ):
            return None
        return pending

    async def _redirect(self, url: str) -> None:
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        self._pending = _Pending(url, state, asyncio.get_running_loop().create_future())
        self._on_needed()

    async def _callback(self) -> AuthorizationCodeResult:
        assert self._pending is not None
        return await self._pending.answer
