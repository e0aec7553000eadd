"""The API docs at ``/docs`` (Swagger UI) from files vendored in the package, and the
favicon.

FastAPI's own pages load their scripts and styles from a CDN, fonts from a font service and
a favicon from another site, and start with an inline script: none of that passes the
Content-Security-Policy, and a docs page should not tell another host who reads it. The
app is built without them (``docs_url=None, redoc_url=None``); this page loads Swagger UI
from ``/ui/static/docs/`` (see ``ui/static/VENDORED.md``). ReDoc is not served: it injects
inline styles the policy refuses, and Swagger UI shows the same schema.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse

from corral.server.ui import STATIC

__all__ = ["install_api_docs"]

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} · API</title>
<link rel="icon" href="/favicon.ico">
<link rel="stylesheet" href="/ui/static/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi="{openapi}"></div>
<script src="/ui/static/docs/swagger-ui-bundle.js"></script>
<script src="/ui/static/docs/docs.js"></script>
</body>
</html>
"""


def install_api_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/favicon.ico`` from the package."""
    page = _PAGE.format(title=app.title, openapi=app.openapi_url or "/openapi.json")

    @app.get("/docs", include_in_schema=False)
    async def api_docs() -> HTMLResponse:
        return HTMLResponse(page)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")
