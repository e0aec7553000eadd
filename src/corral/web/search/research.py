"""Research mode: query-variant fan-out on two lanes, re-ranking and optional page text.

1. The query itself runs under the requested strategy, exactly like a standard search.
2. Follow-up variants (:mod:`.variants`) run on lanes: the first
   ``web_search_research_paid_cap`` of them may use one paid provider (one the primary
   search used, else the first ready one the strategy names); the rest run on the cheaper
   lane — the SearXNG instance if one is configured, then the keyless engine. A paid
   follow-up that fails drops to the cheaper lane. So a research call costs the primary
   search plus at most the cap in paid requests, however many variants run.
3. Every list (each provider's answer to each query) is fused, then re-ranked by
   relevance, freshness and authority (:mod:`.ranking`).
4. ``fetch_top`` pages are read through the fetcher and extraction (:mod:`.pages`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio

from .broker import SearchBroker
from .env import SearchEnv
from .fusion import fuse
from .hits import RankedHit
from .outcome import ProviderReport, SearchOutcome
from .pages import Page, read_pages
from .ranking import research_rank
from .request import SearchRequest, Strategy
from .variants import deterministic_variants, distinct, model_variants

__all__ = ["FollowUp", "ResearchOutcome", "research"]

LaneName = Literal["paid", "free"]
FREE_LANE = ("searxng",)


@dataclass(slots=True, kw_only=True)
class FollowUp:
    """One follow-up variant: the lane it was given and every provider it asked."""

    query: str
    lane: LaneName
    reports: list[ProviderReport] = field(default_factory=list)

    @property
    def answered_by(self) -> ProviderReport | None:
        return next((r for r in self.reports if r.hits), None)


@dataclass(slots=True, kw_only=True)
class ResearchOutcome:
    """The primary search, the follow-ups and the re-ranked, fused results."""

    primary: SearchOutcome
    follow_ups: list[FollowUp]
    results: list[RankedHit]
    paid_cap: int
    paid_lane: str | None
    """The paid provider follow-ups could use, if any."""
    model_variants: int = 0
    pages: list[Page] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reports(self) -> list[ProviderReport]:
        return self.primary.reports + [r for f in self.follow_ups for r in f.reports]

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.reports)

    @property
    def paid_requests(self) -> int:
        return sum(r.requests for r in self.reports if r.paid)


async def _paid_lane(
    broker: SearchBroker, strategy: Strategy, primary: SearchOutcome, env: SearchEnv
) -> str | None:
    for report in primary.answered:
        if report.paid and report.role == "primary":
            return report.provider
    names = env.config.auto_order if strategy == "auto" else (strategy,)
    for name in names:
        provider = broker.providers.get(name)
        if provider is not None and provider.paid:
            if await broker.readiness(provider, primary.request, env, role="follow_up") is None:
                return name
    return None


async def _follow_up(
    broker: SearchBroker, follow: FollowUp, request: SearchRequest, paid: str | None, env: SearchEnv
) -> None:
    if follow.lane == "paid" and paid is not None:
        report = await broker.attempt(broker.providers[paid], request, env, role="follow_up")
        follow.reports.append(report)
        if report.hits:
            return
    for name in FREE_LANE:
        provider = broker.providers.get(name)
        if provider is None:
            continue
        if await broker.readiness(provider, request, env, role="follow_up") is not None:
            continue
        report = await broker.attempt(provider, request, env, role="follow_up")
        follow.reports.append(report)
        if report.hits:
            return
    follow.reports.append(await broker.attempt(broker.keyless, request, env, role="follow_up"))


async def research(
    broker: SearchBroker,
    request: SearchRequest,
    strategy: Strategy,
    env: SearchEnv,
    *,
    fetch_top: int = 0,
) -> ResearchOutcome:
    """Run ``request`` in research mode (see the module docstring)."""
    config = env.config
    primary = await broker.search(request, strategy, env)
    asked = min(config.research_model_variants, config.research_variants)
    model = await model_variants(request.query, asked, env)
    written = model.variants
    notes = [model.note] if model.note else []
    fixed = deterministic_variants(request.query, year=env.clock().year)
    variants = distinct(written + fixed, besides=request.query)[: config.research_variants]
    paid = await _paid_lane(broker, strategy, primary, env)
    follow_ups = [
        FollowUp(query=query, lane="paid" if index < config.research_paid_cap and paid else "free")
        for index, query in enumerate(variants)
    ]
    async with anyio.create_task_group() as group:
        for follow in follow_ups:
            group.start_soon(
                _follow_up, broker, follow, request.with_query(follow.query), paid, env
            )
    lists = [r.hits for r in primary.reports if r.hits]
    lists += [r.hits for f in follow_ups for r in f.reports if r.hits]
    ranked = research_rank(fuse(lists), today=env.clock().date())[: request.max_results]
    warnings = list(primary.warnings) + ([model.warning] if model.warning else [])
    warnings += [w for f in follow_ups for r in f.reports for w in r.warnings]
    pages: list[Page] = []
    if fetch_top > 0 and ranked:
        pages, unread = await read_pages(
            [hit.url for hit in ranked[:fetch_top]], env, max_chars=config.fetch_top_chars
        )
        warnings += unread
    return ResearchOutcome(
        primary=primary,
        follow_ups=follow_ups,
        results=ranked,
        paid_cap=config.research_paid_cap,
        paid_lane=paid,
        model_variants=len([v for v in written if v in variants]),
        pages=pages,
        warnings=warnings,
        notes=notes,
    )
