"""A request body larger than the live setting ``http_body_max_bytes`` is answered 413.

A declared ``Content-Length`` over the limit is refused before anything is read; a body
sent in chunks (or with a lying length) is read here, counted as it arrives and cut off at
the limit, then handed to the route: no route ever holds more than that in memory.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["BodyLimit"]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyLimit:
    """ASGI middleware; ``limit`` is read per request so a live change applies at once."""

    def __init__(self, app: App, limit: Callable[[], Awaitable[int]]) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = await self.limit()
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _refuse(send, limit)
            return
        # Read the body before the app sees it: an error raised from inside a route's body
        # parsing would come out as that route's 400, not as this 413.
        buffered: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > limit:
                await _refuse(send, limit)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "detail": f"the request body is larger than {limit:,} bytes (live setting "
            "http_body_max_bytes); send less, or ask an administrator to raise it",
            "code": "body_too_large",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
