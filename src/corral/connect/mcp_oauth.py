"""The SDK's OAuth client, taught to refresh without a person across restarts and 401s.

The SDK (``mcp.client.auth.OAuthClientProvider``) refreshes an access token only when it
knows the token expired, and it learns the expiry only from a token response it received in
this process: tokens loaded from storage after a restart look valid forever. A server that
answers 401 to a stored token sends it straight to a full authorization, which needs a
person. :class:`RefreshingOAuth` closes both gaps:

- at start it reads the absolute expiry :class:`ExpiringTokens` stored beside the tokens
  and hands the SDK an expiry :data:`EXPIRY_MARGIN_SECONDS` early, so a token that expired
  (or is about to) while the platform was down is refreshed before it is sent;
- a 401 to a request that carried a token restarts the SDK's flow once with the token
  marked expired: the SDK refreshes with the refresh token and sends the request again;
- when that fails too and a person is needed while no one can be waited for (a call on a
  connected session, not a connection being opened), it raises :class:`AuthorizationLost`
  instead of parking the call on a browser, and the connection is told why;
- before a person is asked, a client registration made for another callback address (the
  ``public_url`` changed) is dropped, so the SDK registers again with the current one.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

__all__ = [
    "EXPIRY_MARGIN_SECONDS",
    "AuthorizationLost",
    "AuthorizationWatch",
    "ExpiringTokens",
    "RefreshingOAuth",
]

EXPIRY_MARGIN_SECONDS = 60.0
"""A stored token this close to its expiry is refreshed before it is used."""
_LONG_AGO = 1.0
"""An expiry in the past that the SDK still reads as one (it reads 0 as 'never expires')."""


class AuthorizationLost(Exception):
    """The server no longer accepts the stored authorization and refreshing it failed."""


class AuthorizationWatch(Protocol):
    """What the connection using the provider tells it and hears from it."""

    def may_wait_for_person(self) -> bool:
        """True while the connection is being opened, so a person may be waited for."""
        ...

    def authorization_lost(self, why: str) -> None:
        """The stored authorization is gone: a person must authorize again."""
        ...


class ExpiringTokens(TokenStorage, Protocol):
    """The SDK's ``TokenStorage`` that also keeps each token's absolute expiry."""

    async def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if known."""
        ...


def _sent_token(request: httpx2.Request) -> bool:
    return "authorization" in request.headers


class RefreshingOAuth(OAuthClientProvider):
    """``OAuthClientProvider`` that refreshes stored tokens and retries a 401 once."""

    def __init__(
        self,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        storage: ExpiringTokens,
        *,
        watch: AuthorizationWatch,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
        server_name: str,
    ) -> None:
        super().__init__(
            server_url,
            client_metadata,
            storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        self._expiring = storage
        self._watch = watch
        self._server = server_name

    def _forget_stale_registration(self) -> None:
        """A client registered for another callback address (``public_url`` changed since)
        would send the person's browser there: register again before a person is asked."""
        info, wanted = self.context.client_info, self.context.client_metadata.redirect_uris
        if info is None or not wanted or not info.redirect_uris:
            return
        if str(wanted[0]) not in {str(uri) for uri in info.redirect_uris}:
            self.context.client_info = None

    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        if tokens is None or not tokens.refresh_token:
            self._forget_stale_registration()
        if tokens is None:
            return
        expiry = await self._expiring.expires_at()
        # Unknown expiry (tokens stored before expiries were): used until a 401 says otherwise.
        self.context.token_expiry_time = (
            None if expiry is None else max(_LONG_AGO, expiry - EXPIRY_MARGIN_SECONDS)
        )

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        if not refreshed:
            self._forget_stale_registration()
            self._watch.authorization_lost(
                f"MCP server {self._server!r} refused to refresh the stored authorization "
                f"(HTTP {response.status_code}): a person must authorize again "
                f"(connect authorize mcp {self._server!r}, or `corral connect authorize "
                f"{self._server}`)"
            )
        return refreshed

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        retried = False
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code == 401:
                    if not retried and _sent_token(request) and self.context.can_refresh_token():
                        # Revoked or expired server-side: refresh once, then send it again.
                        retried = True
                        await flow.aclose()
                        refused = request.headers.pop("authorization")
                        current = self.context.current_tokens
                        # Unless a concurrent request refreshed it already: then just resend.
                        if current is not None and refused == f"Bearer {current.access_token}":
                            self.context.token_expiry_time = _LONG_AGO
                        flow = super()._auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                    if not self._watch.may_wait_for_person():
                        why = (
                            f"MCP server {self._server!r} no longer accepts the stored "
                            "authorization and refreshing it failed: a person must authorize "
                            f"again (connect authorize mcp {self._server!r}, or `corral "
                            f"connect authorize {self._server}`)"
                        )
                        self._watch.authorization_lost(why)
                        raise AuthorizationLost(why)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
