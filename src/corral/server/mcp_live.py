"""A tool's live output sent to the MCP client while the call runs: each piece as a
progress notification (when the request asked for progress) and as a log message (at
``info``, ``warning`` for stderr, when the session's log level lets it through).

Handlers may write live output from a worker thread, so pieces are queued onto the event
loop and sent in order by one task; all are sent before the call's result."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.connection import allowed_log_levels
from mcp.types import LoggingMessageNotification, LoggingMessageNotificationParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["LEVELS", "LiveRelay", "log_levels"]

_log = logging.getLogger(__name__)

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels, least severe first."""


def log_levels(ctx: Any, set_level: str | None) -> frozenset[str]:
    """The levels a tool call may log at: from 2026-07-28 what the request's ``_meta`` opts
    into; before, the session's ``logging/setLevel`` and above (none until it is set)."""
    meta = getattr(ctx, "meta", None)
    version = str(getattr(ctx, "protocol_version", ""))
    permitted = frozenset(str(level) for level in allowed_log_levels(version, meta))
    if version in MODERN_PROTOCOL_VERSIONS:
        return permitted
    if set_level not in LEVELS:
        return frozenset()
    return permitted & frozenset(LEVELS[LEVELS.index(set_level) :])


class LiveRelay:
    """Forwards ``sink(stream, text)`` calls as MCP notifications for one tool call."""

    def __init__(
        self,
        session: Any,
        *,
        tool: str,
        progress_token: str | int | None,
        request_id: Any,
        levels: frozenset[str],
    ) -> None:
        self._session = session
        self._tool = tool
        self._token = progress_token
        self._request_id = request_id
        self._levels = levels
        self._queue: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._sent = 0

    def sink(self, stream: str, text: str) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (stream, text))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        sender = asyncio.create_task(self._send_all())
        try:
            yield
        finally:
            self._queue.put_nowait(None)
            await sender

    async def _send_all(self) -> None:
        while (piece := await self._queue.get()) is not None:
            stream, text = piece
            try:
                await self._send(stream, text)
            except Exception:  # a client gone mid-call must not fail the call
                _log.debug("live output of %s not sent", self._tool, exc_info=True)

    async def _send(self, stream: str, text: str) -> None:
        self._sent += 1
        if self._token is not None:
            await self._session.send_progress_notification(
                self._token,
                float(self._sent),
                message=text,
                related_request_id=self._request_id,
            )
        level = "warning" if stream == "stderr" else "info"
        if level in self._levels:
            # Sent as a plain notification: the SDK's send_log_message warns that logging is
            # deprecated, and the levels were already checked for this request's revision.
            params = LoggingMessageNotificationParams(
                level=level, data={"stream": stream, "text": text}, logger=self._tool
            )
            await self._session.send_notification(
                LoggingMessageNotification(params=params), related_request_id=self._request_id
            )
