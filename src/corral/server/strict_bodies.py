"""Every JSON request body is parsed strictly once, here, before a route sees it.

A body sent as JSON (``application/json``, ``…+json``, or no content type, which FastAPI
reads as JSON) must be UTF-8, hold finite numbers only, no lone surrogate escapes, and nest
at most :data:`corral.strict_json.MAX_DEPTH` levels; otherwise the answer is a 422 shaped
as FastAPI's own validation errors (``type: json_invalid``) that says what was wrong.
Routes that read their body raw (webhooks, vendors' inbound, MCP) parse it themselves with
:func:`corral.strict_json.loads` and answer in their own documented shape.

The parsed body is left in the scope under :data:`PARSED_BODY`, so that what answers inside
(the tool call's fast path) need not parse it again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from corral.strict_json import JsonRefused, loads

__all__ = ["PARSED_BODY", "StrictJsonBodies"]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PARSED_BODY = "corral.parsed_body"
"""Scope key of the strictly parsed JSON body (absent for an empty body)."""
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class StrictJsonBodies:
    """ASGI middleware; ``raw_body`` says which paths parse their own body."""

    def __init__(self, app: App, raw_body: Callable[[str], bool]) -> None:
        self.app = app
        self.raw_body = raw_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in _WITH_BODY
            or not _sent_as_json(scope)
            or self.raw_body(scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        buffered: list[Message] = []
        parts: list[bytes] = []
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(parts)
        if body:
            try:
                scope[PARSED_BODY] = loads(body)
            except JsonRefused as exc:
                await _refuse(send, str(exc))
                return

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


def _sent_as_json(scope: Scope) -> bool:
    declared: bytes | None = dict(scope.get("headers") or []).get(b"content-type")
    if declared is None:
        return True  # FastAPI reads a body without a content type as JSON
    media = declared.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )


async def _refuse(send: Send, problem: str) -> None:
    error = {"type": "json_invalid", "loc": ["body"], "msg": problem, "input": {}}
    body = json.dumps({"detail": [error]}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 422,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
