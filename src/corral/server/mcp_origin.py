"""Which ``Host`` and ``Origin`` headers ``/mcp`` answers: its guard against DNS rebinding.

A page on ``evil.example`` whose name is rebound to 127.0.0.1 reaches a loopback server
with ``Host: evil.example`` (and its own ``Origin``). MCP's transport specification asks a
server to refuse such requests, so ``/mcp`` answers only the names it is known by: the
loopback names, the configured ``public_url`` and the address ``corral serve`` binds when
that is one address (not 0.0.0.0). A request without ``Origin`` (not from a browser) is
judged by ``Host`` alone. Ports are not compared: rebinding changes the name, not the port.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import Scope

__all__ = ["AllowedHosts"]

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def _hostname(authority: str) -> str | None:
    """The host name of ``host[:port]`` (IPv6 in brackets), lower-case; None if malformed."""
    try:
        name = urlsplit(f"//{authority}").hostname
    except ValueError:
        return None
    return name.lower() if name else None


class AllowedHosts:
    """The names a request's ``Host`` and ``Origin`` may carry."""

    def __init__(self, *, public_url: str | None, bind_host: str) -> None:
        names = set(_LOOPBACK)
        if public_url:
            public = urlsplit(public_url).hostname
            if public:
                names.add(public.lower())
        if bind_host not in _ANY_ADDRESS:
            names.add(bind_host.strip("[]").lower())
        self.names = frozenset(names)

    def refusal(self, scope: Scope) -> str | None:
        """Why the request's ``Host`` or ``Origin`` is not allowed, or None when both are."""
        host = _header(scope, b"host")
        if host is None or _hostname(host) not in self.names:
            return (
                f"the Host header {host!r} is not a name this server is known by; MCP over HTTP "
                "answers only loopback names and the configured public_url (set public_url to "
                "the address clients use)"
            )
        origin = _header(scope, b"origin")
        if origin is None:
            return None
        parts = urlsplit(origin)
        allowed = parts.scheme in ("http", "https") and (parts.hostname or "") in self.names
        if not allowed:
            return (
                f"the Origin {origin!r} may not call this server (a web page of another site); "
                "only pages of the configured public_url or loopback may"
            )
        return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None
