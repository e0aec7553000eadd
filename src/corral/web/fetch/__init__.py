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
"""

from __future__ import annotations

from .addresses import AddressRules, IPAddress, IPNetwork, non_public_reason, parse_networks
from .body import ContentKind
from .errors import FetchError, FetchErrorCode
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
