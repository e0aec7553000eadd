"""The broker's wire format: one JSON object per line, over a Unix stream socket.

Client to broker, one request per connection::

    {"v": 1, "op": "ping"}
    {"v": 1, "op": "run", "command": "make test", "cwd": "/srv/app", "timeout": 120,
     "env": {"CI": "1"}, "variables": {"SKILL_DIR": "..."},
     "declared": ["WIKI_TOKEN", "CORRAL_TICKET"], "secrets": {"WIKI_TOKEN": "..."}}

``env`` is the call's own, filtered like any call env. ``variables`` are plain values the
platform sets (an active skill's ``SKILL_DIR``, ``SESSION_ID``, ``CORRAL_API``).
``secrets`` are the values the platform staged for this command (a skill's declared
credentials, the run's ticket): each name must be listed in ``declared``; the broker adds
them after rebuilding the environment, redacts their values from the output it sends and
never logs them.

Broker to client::

    {"type": "pong", "allow": [...], "roots": [...], "max_timeout": 300, "confinement": "..."}
    {"type": "refused", "rule": "allowlist", "word": "curl", "detail": "..."}
    {"type": "started", "confinement": "...", "roots": [...], "timeout": 120,
     "staged": ["CORRAL_TICKET", "WIKI_TOKEN"]}                     (names, never values)
    {"type": "output", "stream": "stdout", "text": "..."}          (any number)
    {"type": "exit", "status": "exited"|"timed_out", "exit_code": 0, "duration": 1.5,
     "trimmed": 0}

A client that goes away does not stop the command: it runs on to its end or the broker's
timeout, and its output is discarded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["MAX_LINE", "VERSION", "ProtocolError", "encode", "read_message"]

VERSION = 1
MAX_LINE = 4 * 1024 * 1024


class ProtocolError(Exception):
    """The peer sent something that is not a protocol message."""


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at end of stream."""
    try:
        line = await reader.readline()
    except (asyncio.LimitOverrunError, ValueError) as exc:
        raise ProtocolError(f"message longer than {MAX_LINE} bytes") from exc
    if not line:
        return None
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message
