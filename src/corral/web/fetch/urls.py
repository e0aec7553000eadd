"""URLs the pipeline will fetch: parsed strictly, rebuilt canonically.

:func:`parse_url` accepts ``http://`` and ``https://`` URLs only, refuses credentials in
the authority, and hands the host to :func:`~corral.web.fetch.hosts.parse_host`. The
request is then built from the parsed parts (:attr:`Target.url`), so the host we judge is
the host httpx sends in ``Host`` and TLS SNI — there is no second parser to disagree with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

from .errors import FetchError
from .hosts import Host, parse_host

__all__ = ["Scheme", "Target", "join_location", "parse_url"]

Scheme = Literal["http", "https"]

_MAX_URL_CHARS = 32_768
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}
# "host:8080" and "host:+80" are a host and a port, not a scheme.
_PORT_START = frozenset("0123456789+-")
_STRIP = "".join(chr(c) for c in range(0x21))


@dataclass(frozen=True, slots=True)
class Target:
    """One parsed http(s) URL: scheme, host, port and the path with its query."""

    scheme: Scheme
    host: Host
    port: int
    path: str

    @property
    def url(self) -> str:
        """The canonical URL (no fragment, default port omitted)."""
        port = "" if _DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{self.host.url_form}{port}{self.path}"

    @property
    def origin(self) -> tuple[str, str, int]:
        """``(scheme, host, port)``: what decides whether credentials may follow a redirect."""
        return (self.scheme, self.host.name, self.port)

    def __str__(self) -> str:
        return self.url


def _bad(message: str, url: str) -> FetchError:
    return FetchError(message, code="bad_url", url=url)


def _split_authority(authority: str, url: str) -> tuple[str, str]:
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _bad("the URL opens an IPv6 '[' it does not close", url)
        host, rest = authority[: close + 1], authority[close + 1 :]
        if rest and not rest.startswith(":"):
            raise _bad(f"unexpected {rest!r} after the IPv6 host", url)
        return host, rest[1:] if rest else ""
    if authority.count(":") > 1:
        raise _bad("the host has several ':'; an IPv6 address must be written in [brackets]", url)
    host, _, port = authority.partition(":")
    return host, port


def _parse_port(text: str, scheme: Scheme, url: str) -> int:
    if text == "":
        return _DEFAULT_PORTS[scheme]
    if not (text.isascii() and text.isdigit()) or len(text) > 16:
        raise _bad(f"the port {text!r} is not a number", url)
    port = int(text)
    if not 0 < port < 65536:
        raise _bad(f"the port {port} is out of range", url)
    return port


def parse_url(text: str) -> Target:
    """Parse an absolute http(s) URL; raise :class:`FetchError` when it cannot be fetched.

    Codes: ``blocked_scheme`` for other schemes, ``bad_url`` for anything malformed,
    credentials (``user:pass@``) included, and ``blocked_address`` for IPv6 zone ids.
    """
    url = text.strip(_STRIP)
    if len(url) > _MAX_URL_CHARS:
        raise _bad(f"the URL is longer than {_MAX_URL_CHARS} characters", url[:200])
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise _bad("the URL contains spaces or control characters; percent-encode them", url)
    match = _SCHEME.match(url)
    if match is None or url[match.end() :][:1] in _PORT_START:
        raise _bad("the URL has no scheme; write it as https://host/path", url)
    scheme = match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        raise FetchError(
            f"the scheme {scheme!r} is not allowed; only http and https URLs can be fetched",
            code="blocked_scheme",
            url=url,
            data={"scheme": scheme},
        )
    checked: Scheme = "https" if scheme == "https" else "http"
    rest = url[match.end() :]
    if not rest.startswith("//"):
        raise _bad(f"expected '//' after '{scheme}:'; write it as {scheme}://host/path", url)
    rest = rest[2:]
    end = len(rest)
    for delimiter in "/?#":
        found = rest.find(delimiter)
        if 0 <= found < end:
            end = found
    authority, tail = rest[:end], rest[end:]
    if "\\" in authority:
        raise _bad("the host part contains a backslash", url)
    if "@" in authority:
        raise _bad(
            "the URL carries credentials ('user:password@host'), which are not allowed; "
            "remove them (send an API key as a header instead)",
            url,
        )
    raw_host, raw_port = _split_authority(authority, url)
    try:
        host = parse_host(raw_host)
    except FetchError as exc:
        raise exc.at(url) from None
    port = _parse_port(raw_port, checked, url)
    path = tail.split("#", 1)[0]
    if not path.startswith("/"):
        path = "/" + path
    return Target(scheme=checked, host=host, port=port, path=path)


def join_location(base: Target, location: str) -> str:
    """Resolve a redirect's ``Location`` against the URL that answered with it.

    The result is only a string: the next hop parses and judges it from scratch.
    """
    value = location.strip(_STRIP)
    if value == "":
        raise _bad("the server redirected with an empty Location", base.url)
    if "\\" in value.split("?", 1)[0]:
        raise _bad(f"the redirect Location {value!r} contains a backslash", base.url)
    if _SCHEME.match(value) and value[value.index(":") + 1 :][:1] not in _PORT_START:
        return value
    if value.startswith("//"):
        return f"{base.scheme}:{value}"
    return urljoin(base.url, value)
