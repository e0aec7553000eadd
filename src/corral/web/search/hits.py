"""Search results: one provider's hit, and a result after fusion."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

__all__ = ["Hit", "RankedHit", "Source"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """One result as one provider returned it."""

    title: str
    url: str
    snippet: str
    provider: str
    position: int
    """1-based rank in the provider's answer."""
    published: date | None = None
    """The newest date the provider vouches for (publication or last update), if any."""
    date_field: str | None = None
    """The provider's field the date came from (``page_age``, ``published_date``…)."""
    query: str | None = None
    """The query this hit answered, when several were run (research variants)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Where a fused result was found: a provider, its rank there and the query asked."""

    provider: str
    position: int
    query: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RankedHit:
    """A result after de-duplication and ranking, with every place it was found."""

    title: str
    url: str
    snippet: str
    published: date | None
    date_source: str | None
    """``provider field`` the date came from, e.g. ``brave page_age``."""
    sources: tuple[Source, ...]
    score: float

    @property
    def providers(self) -> tuple[str, ...]:
        """Distinct providers that returned this result, best rank first."""
        return tuple(dict.fromkeys(s.provider for s in self.sources))
