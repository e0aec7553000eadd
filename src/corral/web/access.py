"""Web access as a platform service: one place that turns live settings into a fetcher.

Handlers reach the network only through ``ctx.services.web``. The resolver and the
address rules are the seams tests replace (``WebAccess.for_tests``-style construction with
``AddressRules.unsafe_allowing``); the production default allows public addresses only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from corral.errors import ConfigError
from corral.web.fetch import AddressRules, parse_networks
from corral.web.fetch.resolver import Resolver, SystemResolver

if TYPE_CHECKING:
    from corral.web.fetch import Fetcher, FetchPolicy

__all__ = ["WebAccess", "policy_from_live"]


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def policy_from_live(live: Mapping[str, Any]) -> FetchPolicy:
    """The fetch policy the administrator's live settings describe."""
    from corral.web.fetch import FetchPolicy  # host patterns (idna), with the first fetcher

    try:
        ports = frozenset(int(p) for p in _split(str(live["web_allowed_ports"])))
        networks = parse_networks(_split(str(live["web_deny_networks"])))
    except ValueError as exc:
        raise ConfigError(f"web live settings are malformed: {exc}") from None
    return FetchPolicy(
        allowed_ports=ports,
        deny_hosts=tuple(_split(str(live["web_deny_hosts"]))),
        deny_networks=networks,
        max_redirects=int(live["web_fetch_max_redirects"]),
        text_max_bytes=int(live["web_fetch_text_max_bytes"]),
        pdf_max_bytes=int(live["web_fetch_pdf_max_bytes"]),
        setting_prefix="web_fetch_",
    )


class WebAccess:
    """Builds fetchers under the current live settings."""

    def __init__(
        self, *, resolver: Resolver | None = None, addresses: AddressRules | None = None
    ) -> None:
        self.resolver = resolver or SystemResolver()
        self.addresses = addresses or AddressRules()
        self._cached: tuple[tuple[Any, ...], Fetcher] | None = None

    def fetcher(self, live: Mapping[str, Any]) -> Fetcher:
        key = tuple(
            live[k]
            for k in (
                "web_allowed_ports",
                "web_deny_hosts",
                "web_deny_networks",
                "web_fetch_max_redirects",
                "web_fetch_text_max_bytes",
                "web_fetch_pdf_max_bytes",
            )
        )
        if self._cached is None or self._cached[0] != key:
            from corral.web.fetch import Fetcher  # httpx, with the first fetcher built

            fetcher = Fetcher(
                policy_from_live(live), resolver=self.resolver, addresses=self.addresses
            )
            self._cached = (key, fetcher)
        return self._cached[1]
