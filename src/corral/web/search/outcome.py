"""What a search produced: each provider's report, the ranked results and the warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .domains import FilterName
from .hits import Hit, RankedHit
from .request import SearchRequest, Strategy

__all__ = ["DROP_OUT", "ProviderReport", "ReportStatus", "Role", "SearchOutcome"]

ReportStatus = Literal["answered", "empty", "unconfigured", "failing", "not_available", "standby"]
Role = Literal["primary", "fallback", "follow_up"]

DROP_OUT: frozenset[ReportStatus] = frozenset({"empty", "unconfigured", "failing", "not_available"})
"""Statuses of a provider that was preferred but gave no usable results."""


@dataclass(slots=True, kw_only=True)
class ProviderReport:
    """How one provider fared on one query."""

    provider: str
    status: ReportStatus
    role: Role
    query: str
    paid: bool
    reason: str | None = None
    """Why it dropped out (unconfigured, failing, not available, empty) or stood by."""
    hits: tuple[Hit, ...] = ()
    """Results that passed the domain filters."""
    returned: int = 0
    """Results the provider returned before the filters."""
    removed: dict[FilterName, int] = field(default_factory=dict)
    requests: int = 0
    time_filter: str | None = None
    time_enforced: bool = True
    domains_at_source: bool = False
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    timed_out: bool = False
    elapsed_ms: float = 0.0

    @property
    def asked(self) -> bool:
        """Whether a request was sent (or attempted) to this provider."""
        return self.status in ("answered", "empty", "failing")


@dataclass(slots=True, kw_only=True)
class SearchOutcome:
    """The broker's answer to one query under one strategy."""

    request: SearchRequest
    strategy: Strategy
    results: list[RankedHit]
    reports: list[ProviderReport]
    """Every provider considered, in the order considered; the fallback comes last."""
    warnings: list[str] = field(default_factory=list)

    @property
    def answered(self) -> list[ProviderReport]:
        return [r for r in self.reports if r.status == "answered"]

    @property
    def fallback(self) -> ProviderReport | None:
        return next((r for r in self.reports if r.role == "fallback"), None)

    @property
    def dropouts(self) -> list[ProviderReport]:
        return [r for r in self.reports if r.role == "primary" and r.status in DROP_OUT]

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.reports)

    @property
    def paid_requests(self) -> int:
        return sum(r.requests for r in self.reports if r.paid)

    def removed(self) -> dict[FilterName, int]:
        """Results each domain filter removed, over every provider asked."""
        totals: dict[FilterName, int] = {}
        for report in self.reports:
            for name, count in report.removed.items():
                totals[name] = totals.get(name, 0) + count
        return totals

    @property
    def notes(self) -> list[str]:
        return [note for r in self.reports for note in r.notes]
