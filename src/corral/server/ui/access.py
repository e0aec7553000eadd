"""Who is signed in to the web UI, the CSRF check, and errors as pages.

The signed-in user is resolved to a :class:`Caller` exactly as the API resolves a token's
user, and every page calls the same platform methods with ``user=caller.user_id``: the
UI has no authorisation rules of its own. Errors become HTML (a page, or a fragment for
htmx requests) with the status the API would give, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute

from corral.errors import CorralError, InvalidArguments, NotFound, ToolError, UsageError
from corral.kernel.ui_sessions import UiSessions
from corral.platform import Platform
from corral.policy.identity import Caller
from corral.server.ui.claims import WakeClaims
from corral.server.ui.render import templates
from corral.server.ui.sessions import (
    COOKIE_NAME,
    CSRF_FIELD,
    CSRF_HEADER,
    SessionKeys,
    SignInLinks,
)

__all__ = ["PageCaller", "SignedIn", "UiRoute", "UiState", "require_csrf", "ui_state"]


@dataclass(slots=True)
class UiState:
    """What the UI keeps on the app: the platform, its sessions, the CSRF key, sign-in links
    and the continuations offered to open pages."""

    platform: Platform
    sessions: UiSessions
    keys: SessionKeys
    claims: WakeClaims
    links: SignInLinks = field(default_factory=SignInLinks)


def ui_state(request: Request) -> UiState:
    state: UiState = request.app.state.ui
    return state


class SignInNeeded(Exception):
    """No valid session: pages redirect to the sign-in page, htmx requests get a 401."""


@dataclass(frozen=True, slots=True)
class SignedIn:
    """The caller of a page and the CSRF token its forms carry."""

    caller: Caller
    csrf: str
    platform: Platform

    @property
    def user(self) -> str:
        return self.caller.user_id

    @property
    def is_admin(self) -> bool:
        return self.caller.grants.has("admin.settings")


async def _signed_in(request: Request) -> SignedIn:
    state = ui_state(request)
    cookie = request.cookies.get(COOKIE_NAME)
    session = await state.sessions.find(cookie)
    if session is None or cookie is None:
        raise SignInNeeded
    tokens = state.platform.identity.tokens
    if session.token_id is not None and not await tokens.is_active(session.token_id):
        raise SignInNeeded  # the token it began with was revoked
    try:
        caller = await state.platform.caller(session.user_id)
    except UsageError as exc:  # removed or disabled since sign-in
        raise SignInNeeded from exc
    return SignedIn(caller=caller, csrf=state.keys.csrf_token(cookie), platform=state.platform)


PageCaller = Annotated[SignedIn, Depends(_signed_in)]


async def require_csrf(request: Request, who: PageCaller) -> SignedIn:
    """The caller of a state-changing request that carries the session's CSRF token."""
    token = request.headers.get(CSRF_HEADER)
    if token is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        token = value if isinstance(value, str) else None
    if not ui_state(request).keys.csrf_ok(request.cookies.get(COOKIE_NAME), token):
        raise HTTPException(
            403, "this form has no valid CSRF token: reload the page and send it again"
        )
    return who


def _status(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, HTTPException):
        return exc.status_code, str(exc.detail)
    if isinstance(exc, NotFound):
        return 404, str(exc)
    if isinstance(exc, InvalidArguments):
        return 422, exc.message
    if isinstance(exc, ToolError):
        return 403, exc.message
    return 400, str(exc)


def error_response(request: Request, exc: Exception) -> Response:
    """``exc`` as a page (or, for htmx, a fragment the page shows in its flash area)."""
    if isinstance(exc, SignInNeeded):
        if request.headers.get("HX-Request"):
            return HTMLResponse(
                "<p class='error'>Your session ended: sign in again.</p>", status_code=401
            )
        return RedirectResponse("/ui/sign-in", status_code=303)
    code, message = _status(exc)
    if request.headers.get("HX-Request"):
        html = templates.get_template("_error.html").render(message=message)
        return HTMLResponse(html, status_code=code)
    page = templates.get_template("error.html").render(message=message, code=code, who=None)
    return HTMLResponse(page, status_code=code)


class UiRoute(APIRoute):
    """A route of the UI: its errors become HTML with the API's status codes."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except (CorralError, HTTPException, SignInNeeded) as exc:
                return error_response(request, exc)

        return handle
