"""Domain filters: bare host names that admit or refuse a result's URL, subdomains included."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from corral.errors import InvalidArguments

__all__ = ["DomainFilter", "FilterName", "host_of"]

FilterName = Literal["allow_domains", "block_domains"]

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def host_of(url: str) -> str | None:
    """The lowercase host of ``url`` without a trailing dot, or ``None``."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def _bare_host(entry: str, argument: FilterName) -> str:
    name = entry.strip().lower().rstrip(".")
    if name.startswith("*."):
        name = name[2:]
    try:
        ascii_name = name.encode("idna").decode("ascii") if name else ""
    except UnicodeError:
        ascii_name = ""
    labels = ascii_name.split(".")
    if not ascii_name or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise InvalidArguments(
            f"{argument} entry {entry!r} is not a bare host name; write it like 'python.org' "
            "(no scheme, path or port; subdomains are included)"
        )
    return ascii_name


def _covers(host: str, domains: tuple[str, ...]) -> bool:
    return any(host == domain or host.endswith("." + domain) for domain in domains)


@dataclass(frozen=True, slots=True)
class DomainFilter:
    """``allow`` (only these hosts) and ``block`` (never these hosts), subdomains included."""

    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()

    @classmethod
    def parse(cls, allow: Iterable[str] | None, block: Iterable[str] | None) -> DomainFilter:
        """Check and normalise the tool's ``allow_domains`` / ``block_domains``."""
        allowed = tuple(dict.fromkeys(_bare_host(e, "allow_domains") for e in allow or ()))
        blocked = tuple(dict.fromkeys(_bare_host(e, "block_domains") for e in block or ()))
        return cls(allow=allowed, block=blocked)

    @property
    def active(self) -> bool:
        return bool(self.allow or self.block)

    def refusal(self, url: str) -> FilterName | None:
        """Which filter refuses ``url`` (block first), or ``None`` when it passes."""
        host = host_of(url)
        if host is None:
            return "allow_domains" if self.allow else "block_domains" if self.block else None
        if self.block and _covers(host, self.block):
            return "block_domains"
        if self.allow and not _covers(host, self.allow):
            return "allow_domains"
        return None

    def describe(self, name: FilterName) -> str:
        """``allow_domains [python.org, …]`` for messages."""
        values = self.allow if name == "allow_domains" else self.block
        return f"{name} [{', '.join(values)}]"
