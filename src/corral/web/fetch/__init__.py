"""The hardened fetch pipeline shared by web_fetch and every search provider.

::

    fetcher = Fetcher(FetchPolicy(pdf_max_bytes=30 * 2**20))
    page = await fetcher.fetch("https://example.org/", allow_hosts=["example.org"])
    hits = await fetcher.fetch(
        "https://api.search.example/v1/search",
        method="POST",
        json={"q": "corral"},
        headers={"Authorization": "Bearer …"},
        follow_redirects=False,
        raise_for_status=True,
    )

Modules, one concept each: ``addresses`` (which IPs are public), ``hosts`` (reading host
spellings), ``urls`` (strict URL parsing), ``resolver`` (DNS behind a protocol),
``transport`` (sockets pinned to checked addresses), ``request`` (what is sent),
``redirects`` (next-hop rewriting), ``body`` (kinds, bounded decoding), ``reading`` (the
final body under its ceiling), ``policy`` (administrator settings), ``response``, ``errors``
and ``fetcher`` (the hop loop).

``Fetcher``, ``FetchResponse`` and ``Hop`` load with their first use: they bring httpx (and
its command-line tool's click, rich and pygments, about 0.1 s), which a process that opens
the platform without fetching never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .addresses import AddressRules, IPAddress, IPNetwork, non_public_reason, parse_networks
from .errors import FetchError, FetchErrorCode

if TYPE_CHECKING:
    from .body import ContentKind
    from .fetcher import Fetcher
    from .hosts import Host, HostPattern, parse_host
    from .policy import DEFAULT_PORTS, FetchPolicy
    from .request import Method
    from .resolver import Resolver, StaticResolver, SystemResolver
    from .response import FetchResponse, Hop
    from .urls import Target, parse_url

__all__ = [
    "DEFAULT_PORTS",
    "AddressRules",
    "ContentKind",
    "FetchError",
    "FetchErrorCode",
    "FetchPolicy",
    "FetchResponse",
    "Fetcher",
    "Hop",
    "Host",
    "HostPattern",
    "IPAddress",
    "IPNetwork",
    "Method",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "Target",
    "non_public_reason",
    "parse_host",
    "parse_networks",
    "parse_url",
]

_LAZY = {
    "Fetcher": "fetcher",
    "FetchResponse": "response",
    "Hop": "response",
    "ContentKind": "body",
    "Host": "hosts",
    "HostPattern": "hosts",
    "parse_host": "hosts",
    "DEFAULT_PORTS": "policy",
    "FetchPolicy": "policy",
    "Method": "request",
    "Resolver": "resolver",
    "StaticResolver": "resolver",
    "SystemResolver": "resolver",
    "Target": "urls",
    "parse_url": "urls",
}
"""The names that load their module on first use: the fetcher and response with httpx; the
others (host spellings with idna, URL parsing, the policy, the resolver with anyio) are
needed by the first fetch, not by an open that only builds the web service."""

# Hidden from type checkers, as in ``corral/__init__.py``: they read the imports above.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
