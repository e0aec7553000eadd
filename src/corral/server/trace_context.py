"""Continue a caller's trace: a request's W3C ``traceparent`` header becomes the current
context while the request is handled, so a run it queues (and that run's jobs, wherever
they run) and a call it makes are part of the caller's trace. Installed only when a tracer
is configured."""

from __future__ import annotations

from opentelemetry.context import attach, detach
from opentelemetry.trace import get_current_span
from starlette.types import ASGIApp, Receive, Scope, Send

from corral.tracing.propagation import context_of

__all__ = ["TraceContext"]


class TraceContext:
    """ASGI middleware making an incoming ``traceparent`` the parent of what a request does."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        traceparent = next(
            (v for k, v in scope.get("headers", ()) if k == b"traceparent"), b""
        ).decode("latin-1")
        context = context_of(traceparent)
        if not get_current_span(context).get_span_context().is_valid:
            await self.app(scope, receive, send)  # none, or malformed: ignored as W3C says
            return
        token = attach(context)
        try:
            await self.app(scope, receive, send)
        finally:
            detach(token)
