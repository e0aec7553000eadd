"""The web UI: server-rendered pages (Jinja2) with htmx and its SSE extension, served by the
API's FastAPI app under ``/ui`` with the same authorisation as the API."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from corral.kernel.ui_sessions import UiSessions
from corral.platform import Platform
from corral.server.ui import (
    pages_actions,
    pages_auth,
    pages_channels,
    pages_chat,
    pages_delegates,
    pages_files,
    pages_panels,
    pages_rewind,
    pages_rules,
    pages_tabs,
    pages_trace,
    pages_waiting,
)
from corral.server.ui.access import UiState
from corral.server.ui.claims import install_claims
from corral.server.ui.sessions import SessionKeys

__all__ = ["install_ui", "sign_in_link"]

STATIC = Path(__file__).parent / "static"


def install_ui(app: FastAPI, platform: Platform) -> None:
    """Serve the UI from ``app``: pages under ``/ui``, vendored files under ``/ui/static``."""
    app.state.ui = UiState(
        platform=platform,
        sessions=UiSessions(platform.kernel.sessions),
        keys=SessionKeys.in_private_dir(platform.settings.private_dir),
        claims=install_claims(platform),
    )
    for module in (
        pages_auth,
        pages_chat,
        pages_actions,
        pages_tabs,
        pages_trace,
        pages_delegates,
        pages_files,
        pages_panels,
        pages_rewind,
        pages_channels,
        pages_rules,
        pages_waiting,
    ):
        app.include_router(module.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=307)


def sign_in_link(app: FastAPI, user_id: str, base_url: str) -> str:
    """A one-time sign-in link for ``user_id`` on the app's UI (``corral serve`` prints one)."""
    state: UiState = app.state.ui
    return f"{base_url.rstrip('/')}/ui/sign-in/{state.links.create(user_id)}"
