"""The administrator's settings for the fetch pipeline.

:class:`FetchPolicy` is what the live settings fill in. It can tighten the pipeline (deny
hosts and networks, narrow ports, lower ceilings) but holds nothing that makes a
non-public address reachable: that takes
:meth:`~corral.web.fetch.AddressRules.unsafe_allowing`, passed to the fetcher separately.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.errors import ConfigError

from .addresses import IPNetwork
from .body import ContentKind
from .errors import FetchError
from .hosts import HostPattern

__all__ = ["DEFAULT_PORTS", "FetchPolicy"]

DEFAULT_PORTS = frozenset({80, 443, 8080, 8443})
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPolicy:
    """Limits and lists that apply to every fetch."""

    allowed_ports: frozenset[int] = DEFAULT_PORTS
    """Ports a URL may name, on every hop. The default adds the common alternative HTTP
    ports 8080 and 8443 to 80 and 443; anything else (SSH, SMTP, databases) stays closed."""

    deny_hosts: tuple[str, ...] = ()
    """Host names refused on every hop. ``example.com`` refuses it and all its subdomains,
    ``*.example.com`` only the subdomains; an IP literal refuses that address as a host."""

    deny_networks: tuple[IPNetwork, ...] = ()
    """Extra networks never connected to (on top of every non-public range)."""

    max_redirects: int = 5
    """Redirect hops followed before ``too_many_redirects``."""

    text_max_bytes: int = 5 * _MIB
    """Ceiling for text-like bodies (HTML, JSON, XML, Markdown, plain text), decoded."""

    pdf_max_bytes: int = 20 * _MIB
    """Ceiling for PDF bodies: a PDF cut short yields no text, so it has its own limit."""

    other_max_bytes: int = 5 * _MIB
    """Ceiling for other kinds (images, archives…), when a caller accepts them."""

    default_timeout_ms: int = 30_000
    """``timeout_ms`` when a call gives none: DNS, connect, every hop and the body read."""

    max_timeout_ms: int = 120_000
    """Upper bound on a call's ``timeout_ms``; larger values are clamped to it."""

    user_agent: str = "Mozilla/5.0 (compatible; Corral/0.1; +web_fetch)"
    """``User-Agent`` sent unless the caller sets one."""

    setting_prefix: str = ""
    """Prefix of the setting names that errors quote (e.g. ``web_fetch_`` when the values
    come from the platform's live settings ``web_fetch_pdf_max_bytes``…)."""

    _deny_patterns: tuple[HostPattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for port in self.allowed_ports:
            if not 0 < port < 65536:
                raise ConfigError(f"allowed_ports: {port!r} is not a TCP port")
        for name in ("text_max_bytes", "pdf_max_bytes", "other_max_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be a positive number of bytes")
        if self.max_redirects < 0:
            raise ConfigError("max_redirects cannot be negative")
        if not 0 < self.default_timeout_ms <= self.max_timeout_ms:
            raise ConfigError("default_timeout_ms must be positive and at most max_timeout_ms")
        patterns: list[HostPattern] = []
        for entry in self.deny_hosts:
            try:
                patterns.append(HostPattern.parse(entry, with_subdomains=True))
            except FetchError as exc:
                raise ConfigError(f"deny_hosts: {exc.message}") from None
        object.__setattr__(self, "_deny_patterns", tuple(patterns))

    @property
    def deny_patterns(self) -> tuple[HostPattern, ...]:
        """The parsed :attr:`deny_hosts`."""
        return self._deny_patterns

    def ceiling(self, kind: ContentKind) -> tuple[int, str]:
        """The byte ceiling for a content kind and the name of the setting that holds it."""
        if kind == "pdf":
            return self.pdf_max_bytes, self.setting_prefix + "pdf_max_bytes"
        if kind == "text":
            return self.text_max_bytes, self.setting_prefix + "text_max_bytes"
        return self.other_max_bytes, self.setting_prefix + "other_max_bytes"

    def timeout_seconds(self, timeout_ms: int | None) -> float:
        """The call's time budget in seconds: its own ``timeout_ms`` clamped, or the default."""
        if timeout_ms is None:
            return self.default_timeout_ms / 1000
        if timeout_ms <= 0:
            raise ValueError("timeout_ms must be positive")
        return min(timeout_ms, self.max_timeout_ms) / 1000
