"""What one search asks for: the query and its filters, in provider-neutral terms."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from .domains import DomainFilter

__all__ = ["SearchRequest", "Strategy", "TimeRange"]

TimeRange = Literal["day", "week", "month", "year"]
Strategy = Literal["auto", "native", "tavily", "brave", "searxng"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest:
    """One query to put to a provider."""

    query: str
    max_results: int = 10
    time_range: TimeRange | None = None
    """Only results from this recent window; each provider says how it expressed it."""
    domains: DomainFilter = field(default_factory=DomainFilter)

    def with_query(self, query: str) -> SearchRequest:
        """The same filters for another query (research variants)."""
        return replace(self, query=query)
