"""Signing in and out: a one-time link from ``corral serve``, or an API token.

The session cookie is HTTP-only and SameSite=Strict (and Secure over https); it names a
server-side session that sign-out, ``corral sessions revoke`` and, for one begun with a token,
revoking that token end. The token form has no session yet,
so it carries a double-submit token (a random cookie echoed in the form) instead.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from corral.kernel.ui_sessions import SESSION_SECONDS
from corral.server.ui.access import SignedIn, UiRoute, require_csrf, ui_state
from corral.server.ui.render import templates
from corral.server.ui.sessions import COOKIE_NAME

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

_FORM_COOKIE = "corral_sign_in"


async def _signed_in_response(
    request: Request, user_id: str, *, token_id: str | None = None
) -> Response:
    cookie = await ui_state(request).sessions.begin(user_id, token_id=token_id)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        cookie,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    response.delete_cookie(_FORM_COOKIE, path="/ui/sign-in")
    return response


def _sign_in_page(request: Request, message: str | None = None, status_code: int = 200) -> Response:
    form_token = secrets.token_urlsafe(16)
    html = templates.get_template("sign_in.html").render(
        who=None, message=message, form_token=form_token
    )
    response = HTMLResponse(html, status_code=status_code)
    response.set_cookie(
        _FORM_COOKIE,
        form_token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/ui/sign-in",
    )
    return response


@router.get("/sign-in")
async def sign_in_page(request: Request) -> Response:
    return _sign_in_page(request)


@router.post("/sign-in")
async def sign_in_with_token(
    request: Request,
    token: Annotated[str, Form()] = "",
    csrf_token: Annotated[str, Form()] = "",
) -> Response:
    expected = request.cookies.get(_FORM_COOKIE)
    if not expected or not secrets.compare_digest(expected, csrf_token):
        return _sign_in_page(request, "The form expired: try again.", status_code=403)
    # API tokens only: a run's ticket dies with its run and cannot begin a browser session.
    found = await ui_state(request).platform.identity.tokens.lookup(token.strip())
    if found is None:
        return _sign_in_page(request, "Unknown or revoked token.", status_code=401)
    return await _signed_in_response(request, found.user_id, token_id=found.token_id)


@router.get("/sign-in/{code}")
async def sign_in_with_link(request: Request, code: str) -> Response:
    user_id = ui_state(request).links.spend(code)
    if user_id is None:
        return _sign_in_page(
            request,
            "That sign-in link was already used or has expired: restart corral serve for a "
            "new one, or sign in with a token.",
            status_code=401,
        )
    return await _signed_in_response(request, user_id)


@router.post("/sign-out")
async def sign_out(request: Request, who: Annotated[SignedIn, Depends(require_csrf)]) -> Response:
    await ui_state(request).sessions.end(request.cookies.get(COOKIE_NAME))
    response = RedirectResponse("/ui/sign-in", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/")
    return response
