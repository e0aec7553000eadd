"""The provider interface every search backend implements, and how one says it cannot run.

A provider is anything with a ``name``, a ``paid`` flag and two coroutines:

- ``ready(env)`` checks, without touching the network, that it can run for this caller
  (a key or instance URL is configured, the conversation's model offers native search);
  it raises :class:`ProviderSkipped` otherwise;
- ``search(request, env)`` runs one query and returns a :class:`ProviderAnswer`, raising
  :class:`ProviderFailed` (or letting a :class:`~corral.web.fetch.FetchError` through)
  when the provider answered with an error or not at all.

Real providers live in :mod:`corral.web.search.providers`; the broker needs nothing else,
so tests and the benchmark plug in in-process fakes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from .hits import Hit
from .request import SearchRequest

if TYPE_CHECKING:
    from .env import SearchEnv

__all__ = ["ProviderAnswer", "ProviderFailed", "ProviderSkipped", "SearchProvider", "SkipKind"]

SkipKind = Literal["unconfigured", "not_available"]


class ProviderSkipped(Exception):
    """The provider cannot run here; it is skipped, not failed.

    ``kind`` is ``unconfigured`` (no key or instance URL) or ``not_available`` (e.g. the
    conversation's model has no native search); ``reason`` says what to do about it.
    """

    def __init__(self, kind: SkipKind, reason: str) -> None:
        super().__init__(reason)
        self.kind: SkipKind = kind
        self.reason = reason


class ProviderFailed(Exception):
    """The provider was asked and failed: an error status, a malformed answer, a timeout."""

    def __init__(self, reason: str, *, status: int | None = None, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderAnswer:
    """What one provider returned for one query."""

    hits: tuple[Hit, ...]
    requests: int = 1
    """Billable requests it took (native search: searches the vendor ran)."""
    time_filter: str | None = None
    """How ``time_range`` was expressed in the provider's dialect (``freshness=pw``…)."""
    time_enforced: bool = True
    """False when the provider could not express the window and ran without it."""
    domains_at_source: bool = False
    """Whether the domain filters were handed to the provider itself."""
    notes: tuple[str, ...] = ()
    """Anything else the model should know about how the request was expressed."""
    warnings: tuple[str, ...] = ()
    """Problems inside an answer that still counts (e.g. SearXNG engines that failed)."""


class SearchProvider(Protocol):
    """A search backend behind the broker."""

    name: str
    """Stable lowercase name: ``tavily``, ``brave``, ``searxng``, ``duckduckgo``, ``native``."""
    paid: bool
    """Whether a request costs money (research mode caps paid follow-ups)."""
    accepts_domains: bool
    """Whether it takes allow/block domain filters itself (they are enforced again anyway)."""

    async def ready(self, env: SearchEnv) -> None:
        """Raise :class:`ProviderSkipped` when this provider cannot run for this call."""
        ...

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        """Run ``request``; raise :class:`ProviderFailed` when the provider fails."""
        ...
