"""The OAuth callback of MCP servers: where a person's browser lands after authorizing.

No bearer token here: the browser of the person who opened the authorization URL arrives
with only the redirect's parameters. The ``state`` (unguessable, one per authorization in
progress) is what ties the answer to the server waiting for it; an unknown one is refused.
The page never shows the code or a token.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from corral.packages.core.mcp_servers import CALLBACK_PATH, McpServers
from corral.server.deps import PlatformDep

router = APIRouter(tags=["connect"])

_WAIT_SECONDS = 60.0


def _page(status: int, title: str, text: str) -> HTMLResponse:
    body = f"<!doctype html><meta charset=utf-8><title>Corral</title><h1>{title}</h1><p>{text}</p>"
    return HTMLResponse(body, status_code=status)


@router.get(CALLBACK_PATH, include_in_schema=False)
async def oauth_callback(
    platform: PlatformDep,
    state: str = "",
    code: str = "",
    iss: str | None = None,
    error: str = "",
) -> HTMLResponse:
    """Hand the authorization code to the MCP server waiting for it."""
    servers = platform.services.get(McpServers)
    if servers is None or not state or not (code or error):
        return _page(400, "Not an authorization answer", "This page expects an OAuth redirect.")
    try:
        async with asyncio.timeout(_WAIT_SECONDS):
            view = await servers.complete_authorization(
                state=state, code=code, iss=iss, error=error[:200]
            )
    except TimeoutError:
        return _page(
            504, "Still connecting", "The server has not answered yet; check it with connect."
        )
    if view is None:
        return _page(
            400,
            "Unknown or finished authorization",
            "No connection is waiting for this answer: it was used already or has expired. "
            "Start the authorization again.",
        )
    if view.state == "connected":
        return _page(200, "Connected", "You can close this page and go back to Corral.")
    return _page(
        502,
        "Not connected",
        "The authorization did not complete; ask for a new authorization link and try again.",
    )
