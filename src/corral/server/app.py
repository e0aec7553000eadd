"""The FastAPI application."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.routing import Route

import corral
from corral.errors import (
    AlreadyDecided,
    ConversationBusy,
    InvalidArguments,
    NotFound,
    ToolError,
    UsageError,
)
from corral.packages.core.mcp_servers import CALLBACK_PATH
from corral.platform import Platform
from corral.server.access_log import hide_oauth_queries
from corral.server.api_docs import install_api_docs
from corral.server.body_limit import BodyLimit
from corral.server.fast_tool_call import FastToolCalls
from corral.server.mcp_http import McpEndpoint
from corral.server.openapi_errors import document_errors
from corral.server.routes import (
    agents,
    approvals,
    channels,
    connect_oauth,
    context,
    conversations,
    decisions,
    delegates,
    egress,
    forks,
    hooks,
    rewind,
    rules,
    settings,
    shells,
    tools,
    workflows,
)
from corral.server.security_headers import SecurityHeaders
from corral.server.strict_bodies import StrictJsonBodies
from corral.server.trace_context import TraceContext
from corral.server.ui import install_ui
from corral.strict_json import json_safe

__all__ = ["create_app"]


def create_app(platform: Platform, *, close_platform: bool = False) -> FastAPI:
    """An app serving ``platform``; with ``close_platform`` it closes it on shutdown."""

    mcp_endpoint = McpEndpoint(platform)
    hide_oauth_queries([CALLBACK_PATH])

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await platform.runtime.host()  # schedules; and deliver what waited while none ran
        async with mcp_endpoint.running():
            yield
        if close_platform:
            await platform.close()

    app = FastAPI(
        title="Corral",
        version=corral.__version__,
        description="Schema-first tools behind one dispatch pipeline.",
        lifespan=lifespan,
        docs_url=None,  # served from vendored files by install_api_docs
        redoc_url=None,
    )
    app.state.platform = platform
    app.openapi = lambda: document_errors(FastAPI.openapi(app))  # type: ignore[method-assign]

    async def body_limit() -> int:
        return int((await platform.kernel.live_settings())["http_body_max_bytes"])

    app.add_middleware(FastToolCalls, api=app)  # innermost: takes the body parsed below
    app.add_middleware(StrictJsonBodies, raw_body=_parses_own_body)
    app.add_middleware(BodyLimit, limit=body_limit)  # nothing reads past the limit
    if platform.kernel.dispatcher.tracer is not None:
        app.add_middleware(TraceContext)
    app.add_middleware(SecurityHeaders)  # outermost: every answer carries the headers

    @app.exception_handler(RequestValidationError)
    async def unprocessable(request: Request, exc: RequestValidationError) -> JSONResponse:
        # The errors echo the input, which may hold what JSON cannot carry.
        errors = jsonable_encoder(exc.errors(), custom_encoder={bytes: _bytes_shown})
        return JSONResponse({"detail": json_safe(errors)}, status_code=422)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(AlreadyDecided)
    async def already_decided(request: Request, exc: AlreadyDecided) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "already_decided"}, status_code=409)

    @app.exception_handler(ConversationBusy)
    async def busy(request: Request, exc: ConversationBusy) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "conversation_busy"}, status_code=409)

    @app.exception_handler(UsageError)
    async def bad_request(request: Request, exc: UsageError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(InvalidArguments)
    async def invalid(request: Request, exc: InvalidArguments) -> JSONResponse:
        body = {"detail": exc.message, "code": exc.code, "data": exc.data}
        return JSONResponse(json_safe(body), status_code=422)  # data may echo arguments

    @app.exception_handler(ToolError)
    async def refused(request: Request, exc: ToolError) -> JSONResponse:
        return JSONResponse({"detail": exc.message, "code": exc.code}, status_code=403)

    @app.get("/health", tags=["health"])
    async def health() -> dict[str, Any]:
        body: dict[str, Any] = {
            "status": "ok",
            "version": corral.__version__,
            "tools": len(platform.registry.tools),
            "load_errors": len(platform.registry.errors),
            "hook_problems": len(platform.hooks.problems),  # `corral hooks list` says which
        }
        cluster = await platform.runtime.cluster_health()
        if cluster is not None:  # queued runs with no live worker: degraded
            body["status"] = cluster.status
            body["cluster"] = cluster.to_json()
        return body

    app.include_router(tools.router)
    app.include_router(approvals.router)
    app.include_router(decisions.router)
    app.include_router(egress.router)
    app.include_router(settings.router)
    app.include_router(shells.router)
    app.include_router(conversations.router)
    app.include_router(forks.router)
    app.include_router(rewind.router)
    app.include_router(context.router)
    app.include_router(delegates.router)
    app.include_router(workflows.router)
    app.include_router(hooks.router)
    app.include_router(rules.router)
    app.include_router(connect_oauth.router)
    # A route, not a mount: a mount would answer /mcp with a redirect to /mcp/.
    app.router.routes.append(
        Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )
    app.include_router(agents.router)
    app.include_router(channels.router)
    install_ui(app, platform)
    install_api_docs(app)
    return app


def _parses_own_body(path: str) -> bool:
    """Webhooks and vendors' inbound parse their body themselves (strictly too) and answer in
    their own documented shape; MCP answers JSON-RPC errors."""
    return (
        path.startswith("/hooks/")
        or (path.startswith("/channels/") and path.endswith("/inbound"))
        or path == "/mcp"
    )


def _bytes_shown(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")
