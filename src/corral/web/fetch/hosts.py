"""Host names and literal addresses, read the way the operating system would read them.

:func:`parse_host` turns the host part of a URL into a :class:`Host`: either a literal
address or a lowercase ASCII DNS name. It does its own parsing instead of trusting a
resolver, because ``getaddrinfo`` happily reads ``0x7f.1``, ``2130706433`` or ``0177.0.0.1``
as 127.0.0.1. The steps, in order:

1. percent-decoding (``%31%32%37.0.0.1``), as browsers do for hosts;
2. Unicode NFKC and lower-casing, so full-width digits and dots, enclosed alphanumerics
   (circled letters) and the like become what they look like, and the ideographic full stop
   becomes a dot;
3. one trailing dot dropped;
4. a host whose last label is a number in any base is an IPv4 address in ``inet_aton``
   syntax (1 to 4 parts, decimal, octal with a leading 0, hex with 0x) — or, if that does
   not parse, refused as ambiguous; it never reaches a resolver;
5. anything else must be a DNS name: non-ASCII labels are IDNA-encoded (UTS #46), every
   label must be letters, digits, hyphens or underscores.

IPv6 literals come in brackets; zone identifiers (``[fe80::1%25eth0]``) name a local
interface and are refused. :func:`name_refusal` then refuses names that only mean something
locally (``localhost``, ``*.localhost``, ``.local``, ``.internal``…) and single-label names,
which resolvers complete with local search domains.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import idna

from .addresses import IPAddress
from .errors import FetchError

__all__ = ["Host", "HostPattern", "name_refusal", "parse_host", "parse_ipv4_spelling"]

_MAX_HOST_CHARS = 1024
_MAX_NAME_CHARS = 253
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_IPV6_CHARS = re.compile(r"[0-9a-f:.]+")
_DOTS = {"\u3002": ".", "\uff0e": ".", "\uff61": "."}
# Characters that may never appear in a host once decoded (WHATWG forbidden host code points
# plus the delimiters that would change the meaning of the URL).
_FORBIDDEN = frozenset("\x00\t\n\r #%/:<>?@[\\]^|'\"`{}")

_LOCAL_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "broadcasthost"}
)
_LOCAL_SUFFIXES = (
    "localhost",
    "local",
    "localdomain",
    "internal",
    "intranet",
    "private",
    "corp",
    "home",
    "lan",
    "home.arpa",
)


@dataclass(frozen=True, slots=True)
class Host:
    """A parsed host: ``name`` is its canonical ASCII text, ``address`` set for literals.

    For a DNS name, ``name`` is lowercase, IDNA-encoded and without a trailing dot; for an
    IPv4 literal, dotted-quad; for IPv6, the compressed form without brackets.
    """

    name: str
    address: IPAddress | None = None

    @property
    def url_form(self) -> str:
        """The host as written inside a URL (IPv6 in brackets)."""
        if isinstance(self.address, IPv6Address):
            return f"[{self.name}]"
        return self.name

    def __str__(self) -> str:
        return self.name


def _bad(message: str) -> FetchError:
    return FetchError(message, code="bad_url")


def _percent_decode(raw: str) -> str:
    if "%" not in raw:
        return raw
    if re.search(r"%(?![0-9A-Fa-f]{2})", raw):
        raise _bad(f"the host {raw!r} has a '%' that is not a percent-escape")
    out = bytearray()
    index = 0
    try:
        while index < len(raw):
            char = raw[index]
            if char == "%":
                out.append(int(raw[index + 1 : index + 3], 16))
                index += 3
            else:
                out.extend(char.encode("utf-8"))
                index += 1
        return out.decode("utf-8")
    except UnicodeError:
        raise _bad(f"the host {raw!r} percent-decodes to invalid UTF-8") from None


def _is_numeric_label(label: str) -> bool:
    if not label.isascii():
        return False
    if label.isdigit():
        return True
    return label.startswith("0x") and all(c in "0123456789abcdef" for c in label[2:])


def _ipv4_part(part: str, spelled: str) -> int:
    if part == "":
        raise _bad(f"the numeric host {spelled!r} has an empty part")
    try:
        if part.startswith("0x"):
            if len(part) == 2:
                raise ValueError(part)
            return int(part[2:], 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        if not (part.isascii() and part.isdigit()):
            raise ValueError(part)
        return int(part, 10)
    except ValueError:
        raise _bad(
            f"the host {spelled!r} looks like a numeric IPv4 address but {part!r} is not a "
            "valid decimal, octal (leading 0) or hex (0x) number; write the address as four "
            "decimal numbers or use a host name"
        ) from None


def parse_ipv4_spelling(text: str) -> IPv4Address:
    """Read ``text`` as ``inet_aton`` would: ``127.1``, ``0x7f.1``, ``017700000001``…

    ``text`` must already be lowercase ASCII with no trailing dot. Raises a ``bad_url``
    :class:`FetchError` when it is not a valid spelling.
    """
    parts = text.split(".")
    if len(parts) > 4:
        raise _bad(f"the numeric host {text!r} has more than four parts")
    if any(len(part) > 40 for part in parts):
        raise _bad(f"the numeric host {text!r} has a part that is far too long")
    numbers = [_ipv4_part(part, text) for part in parts]
    for number in numbers[:-1]:
        if number > 0xFF:
            raise _bad(f"the numeric host {text!r} has a part above 255")
    last_bits = 8 * (5 - len(numbers))
    if numbers[-1] >= 1 << last_bits:
        raise _bad(f"the numeric host {text!r} is out of the IPv4 range")
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value |= number << (24 - 8 * index)
    return IPv4Address(value)


def _parse_ipv6_literal(raw: str) -> Host:
    inner = raw[1:-1]
    if "%" in inner:
        raise FetchError(
            f"the IPv6 host {raw!r} carries a zone identifier, which names a local network "
            "interface; only public addresses can be fetched",
            code="blocked_address",
            data={"host": raw},
        )
    lowered = inner.lower()
    if not _IPV6_CHARS.fullmatch(lowered):
        raise _bad(f"the bracketed host {raw!r} is not an IPv6 address")
    try:
        address = IPv6Address(lowered)
    except ValueError:
        raise _bad(f"the bracketed host {raw!r} is not a valid IPv6 address") from None
    return Host(address.compressed, address)


def _encode_label(label: str, spelled: str) -> str:
    if label.isascii():
        return label
    try:
        encoded = idna.encode(label, uts46=True, transitional=False).decode("ascii")
    except UnicodeError as exc:
        raise _bad(f"the host {spelled!r} is not a valid internationalised name: {exc}") from None
    return encoded


def _check_a_label(label: str, spelled: str) -> None:
    if not label.startswith("xn--"):
        return
    try:
        decoded = idna.decode(label)
    except idna.IDNAError:
        raise _bad(f"the host {spelled!r} has an invalid punycode label {label!r}") from None
    if decoded.isascii():
        raise _bad(f"the host {spelled!r} has a punycode label {label!r} with no non-ASCII")


def parse_host(raw: str) -> Host:
    """Parse the host part of a URL (without port) into a :class:`Host`.

    Raises :class:`FetchError` (``bad_url``, or ``blocked_address`` for zone identifiers).
    """
    if raw == "":
        raise _bad("the URL has no host; write it as http(s)://host/path")
    if len(raw) > _MAX_HOST_CHARS:
        raise _bad("the host is far longer than any real host name")
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise _bad(f"the host {raw!r} opens a '[' it does not close")
        return _parse_ipv6_literal(raw)

    text = _percent_decode(raw)
    text = unicodedata.normalize("NFKC", text)
    for dot, ascii_dot in _DOTS.items():
        text = text.replace(dot, ascii_dot)
    text = text.lower()
    bad_chars = sorted({c for c in text if c in _FORBIDDEN or unicodedata.category(c)[0] in "CZ"})
    if bad_chars:
        shown = ", ".join(repr(c) for c in bad_chars)
        raise _bad(f"the host {raw!r} contains characters a host cannot have: {shown}")
    if text.endswith("."):
        text = text[:-1]
    if text == "":
        raise _bad(f"the host {raw!r} is empty")
    labels = text.split(".")
    if _is_numeric_label(labels[-1]):
        address = parse_ipv4_spelling(text)
        return Host(str(address), address)

    ascii_labels = [_encode_label(label, raw) for label in labels]
    name = ".".join(ascii_labels).lower()
    labels = name.split(".")
    if _is_numeric_label(labels[-1]):
        address = parse_ipv4_spelling(name)
        return Host(str(address), address)
    if len(name) > _MAX_NAME_CHARS:
        raise _bad(f"the host {raw!r} is longer than 253 characters")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise _bad(
                f"the host {raw!r} has an invalid label {label!r}: labels are 1-63 letters, "
                "digits, hyphens or underscores and do not start or end with a hyphen"
            )
        _check_a_label(label, raw)
    return Host(name)


def name_refusal(host: Host) -> str | None:
    """Why a host *name* is refused before any lookup, or ``None``."""
    if host.address is not None:
        return None
    name = host.name
    if name in _LOCAL_NAMES:
        return f"{name!r} names this machine"
    for suffix in _LOCAL_SUFFIXES:
        if name == suffix or name.endswith("." + suffix):
            return f"names under {'.' + suffix!r} only exist on local networks"
    if "." not in name:
        return (
            f"{name!r} is a single-label name, which resolvers complete with local search "
            "domains; use the fully qualified name"
        )
    return None


@dataclass(frozen=True, slots=True)
class HostPattern:
    """A host in an allow- or deny-list: ``example.com`` or ``*.example.com``.

    ``*.example.com`` matches every name below ``example.com`` but not ``example.com``
    itself. A plain name matches itself, and also its subdomains when
    ``with_subdomains`` (how deny-lists read plain domains).
    """

    host: Host
    wildcard: bool = False
    with_subdomains: bool = False

    @classmethod
    def parse(cls, text: str, *, with_subdomains: bool = False) -> HostPattern:
        """Parse one entry; a ``bad_url`` :class:`FetchError` names the entry on failure."""
        entry = text.strip()
        wildcard = entry.startswith("*.")
        body = entry[2:] if wildcard else entry
        if "://" in entry or "/" in body or "*" in body:
            raise _bad(
                f"the host pattern {text!r} is not a bare host; write 'example.com' or "
                "'*.example.com'"
            )
        try:
            host = parse_host(body)
        except FetchError as exc:
            raise _bad(f"the host pattern {text!r} cannot be used: {exc.message}") from None
        if wildcard and host.address is not None:
            raise _bad(f"the host pattern {text!r} puts a wildcard on an address")
        return cls(host, wildcard=wildcard, with_subdomains=with_subdomains)

    def matches(self, host: Host) -> bool:
        """Whether ``host`` is covered by this pattern."""
        if self.host.address is not None or host.address is not None:
            return self.host.address == host.address and not self.wildcard
        below = host.name.endswith("." + self.host.name)
        if self.wildcard:
            return below
        return host.name == self.host.name or (self.with_subdomains and below)

    def __str__(self) -> str:
        return ("*." if self.wildcard else "") + self.host.url_form
