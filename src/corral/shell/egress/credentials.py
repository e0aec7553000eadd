"""Credentials injected at the egress proxy: the sandbox holds a placeholder, never the secret.

A stored credential may name the hosts it is for (``inject_hosts``) and how it is sent
(``inject_as``): in a header (``Authorization`` or a custom one), as a query parameter, or as
the password of HTTP basic auth (what git sends). The sandbox is given
:func:`placeholder` — the same length, prefix and character classes as the secret, so
clients that check a token's shape accept it, and never equal to it. The intercepting proxy
calls :func:`swap_credentials` on each request it forwards: only on a TLS connection it
terminated, and only for bindings whose hosts include the connection's host (the host the
sandbox asked to connect to, not its ``Host`` header), the placeholder is replaced by the
real value where the binding says it is sent. Anywhere else the placeholder passes as is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, quote, urlencode

from corral.errors import UsageError

__all__ = [
    "INJECT_AS",
    "CredentialBinding",
    "InjectAs",
    "placeholder",
    "swap_credentials",
]

InjectAs = Literal["header", "query", "basic"]
INJECT_AS: tuple[InjectAs, ...] = ("header", "query", "basic")
DEFAULT_FIELD: dict[InjectAs, str] = {"header": "authorization", "query": "", "basic": ""}

_PREFIX = re.compile(r"^(?:[A-Za-z]{1,10}[_-]){1,3}")
_PLACEHOLDER_KEY = b"corral egress placeholder v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialBinding:
    """A stored secret, the hosts it may be sent to and how it is sent there."""

    name: str
    """The credential's name in the store (shown in logs; never the value)."""
    secret: str = field(repr=False)
    hosts: tuple[str, ...]
    """Host names, or ``*.domain`` wildcards (which match below the domain, not the domain)."""
    inject_as: InjectAs
    field_name: str = ""
    """The header name (``header``; default ``authorization``) or query parameter (``query``)."""

    def __post_init__(self) -> None:
        if self.inject_as == "query" and not self.field_name:
            raise UsageError(
                f"credential {self.name!r} is sent as a query parameter but names none; "
                "give the parameter's name (for example --inject-field api_key)"
            )

    @property
    def header(self) -> str:
        """The header the secret travels in (lowercase): ``authorization`` for basic auth."""
        if self.inject_as == "header":
            return (self.field_name or DEFAULT_FIELD["header"]).lower()
        return "authorization"

    def binds(self, host: str) -> bool:
        """Whether the secret may be sent to ``host``."""
        host = host.lower().rstrip(".")
        for bound in self.hosts:
            if bound.startswith("*."):
                if host.endswith(bound[1:]) and host != bound[2:]:
                    return True
            elif host == bound:
                return True
        return False


def placeholder(binding: CredentialBinding) -> str:
    """A stand-in of the secret's shape: prefix kept (``ghp_``, ``sk-``), every other
    character a derived one of the same class. Derived, so the sandbox's copy and the proxy's
    agree without being stored; keyed by the name so two credentials never share one."""
    secret = binding.secret
    prefix = _PREFIX.match(secret)
    kept = prefix.group(0) if prefix and prefix.end() * 2 < len(secret) else ""
    stream = _stream(binding.name, secret, len(secret))
    chars = [kept]
    for index, char in enumerate(secret[len(kept) :], start=len(kept)):
        chars.append(_same_class(char, stream[index]))
    made = "".join(chars)
    if made == secret:
        # Only a secret with no letters or digits after its prefix maps onto itself.
        made = made[:-1] + ("x" if made[-1] != "x" else "y")
    return made


def _stream(name: str, secret: str, length: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        message = f"{name}\0{counter}\0{secret}".encode()
        out += hmac.new(_PLACEHOLDER_KEY, message, hashlib.sha256).digest()
        counter += 1
    return out[:length]


def _same_class(char: str, byte: int) -> str:
    for alphabet in (string.ascii_lowercase, string.ascii_uppercase, string.digits):
        if char in alphabet:
            return alphabet[byte % len(alphabet)]
    return char


def swap_credentials(
    host: str,
    target: str,
    headers: Sequence[tuple[bytes, bytes]],
    bindings: Sequence[CredentialBinding],
) -> tuple[str, list[tuple[bytes, bytes]], list[str]]:
    """The request target and headers with the placeholders of bindings bound to ``host``
    replaced by their secrets, and the names of the credentials that were.

    Call only for a TLS connection the proxy terminated towards ``host`` itself.
    """
    used: list[str] = []
    out = list(headers)
    for binding in bindings:
        if not binding.binds(host):
            continue
        stand_in = placeholder(binding)
        if binding.inject_as == "query":
            target, swapped = _swap_query(target, binding.field_name, stand_in, binding.secret)
        else:
            out, swapped = _swap_header(out, binding, stand_in)
        if swapped:
            used.append(binding.name)
    return target, out, used


def _swap_header(
    headers: list[tuple[bytes, bytes]], binding: CredentialBinding, stand_in: str
) -> tuple[list[tuple[bytes, bytes]], bool]:
    wanted = binding.header.encode("ascii")
    swapped = False
    out: list[tuple[bytes, bytes]] = []
    for name, value in headers:
        if name.lower() == wanted:
            new = (
                _swap_basic(value, stand_in, binding.secret)
                if binding.inject_as == "basic"
                else value.replace(stand_in.encode(), binding.secret.encode())
            )
            swapped = swapped or new != value
            value = new
        out.append((name, value))
    return out, swapped


def _swap_basic(value: bytes, stand_in: str, secret: str) -> bytes:
    scheme, _, encoded = value.strip().partition(b" ")
    if scheme.lower() != b"basic":
        return value
    try:
        user, colon, password = base64.b64decode(encoded, validate=True).partition(b":")
    except (binascii.Error, ValueError):
        return value
    if not colon or password != stand_in.encode():
        return value
    return b"Basic " + base64.b64encode(user + b":" + secret.encode())


def _swap_query(target: str, field: str, stand_in: str, secret: str) -> tuple[str, bool]:
    path, mark, query = target.partition("?")
    if not mark:
        return target, False
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(key == field and value == stand_in for key, value in pairs):
        return target, False
    swapped = [
        (key, secret if key == field and value == stand_in else value) for key, value in pairs
    ]
    return f"{path}?{urlencode(swapped, quote_via=quote)}", True
