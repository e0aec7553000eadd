"""Security headers on every response: a Content-Security-Policy that lets a page load and
reach only this server (no inline script, no frames around it), ``nosniff`` and a
same-origin referrer.

A Markdown image a model writes is rendered as a link (see ``ui.render``); the policy is the
second wall: should anything still put an outside ``<img>`` in a page, the browser does not
fetch it, so injected instructions cannot carry data out through a picture.
"""

from __future__ import annotations

from corral.server.body_limit import App, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeaders"]

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        # data: for images a tool returned, inlined by the page; nothing is fetched for them.
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]
_NAMES = {name for name, _ in _HEADERS}


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP response."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() not in _NAMES
                ]
                message = {**message, "headers": [*kept, *_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)
