"""The request a fetch sends: method, headers and body, checked before anything is sent."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from corral.errors import UsageError

from .body import ACCEPT_ENCODING

__all__ = ["RESERVED_HEADERS", "Method", "Outgoing", "build_outgoing"]

Method = Literal["GET", "HEAD", "POST"]

RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "accept-encoding",
    }
)
"""Headers the pipeline owns: framing, routing and encoding are never the caller's to set."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """The method, headers and body of the request for one hop."""

    method: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None = None


def build_outgoing(
    method: str,
    headers: Mapping[str, str] | None,
    json: Any,
    content: bytes | None,
    *,
    user_agent: str,
) -> Outgoing:
    """Check and assemble the first hop's request; misuse raises :class:`UsageError`."""
    if method not in ("GET", "HEAD", "POST"):
        raise UsageError(f"method {method!r} is not supported; use GET, HEAD or POST")
    if json is not None and content is not None:
        raise UsageError("pass either json or content, not both")
    body: bytes | None = None
    if json is not None:
        body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":")).encode()
    elif content is not None:
        body = bytes(content)
    if body is not None and method != "POST":
        raise UsageError(f"a {method} request cannot carry a body; use POST")
    merged: dict[str, tuple[str, str]] = {
        "user-agent": ("User-Agent", user_agent),
        "accept": ("Accept", "*/*"),
    }
    if json is not None:
        merged["content-type"] = ("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if lowered in RESERVED_HEADERS or lowered.startswith("proxy-"):
            raise UsageError(f"the header {name!r} is set by the fetch pipeline, not callers")
        if any(c in value for c in "\r\n\x00") or any(c in name for c in "\r\n\x00:"):
            raise UsageError(f"the header {name!r} contains a line break or NUL")
        merged[lowered] = (name, value)
    merged["accept-encoding"] = ("Accept-Encoding", ACCEPT_ENCODING)
    return Outgoing(method=method, headers=tuple(merged.values()), body=body)
