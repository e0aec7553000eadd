"""Rendering an outcome as the text the model reads and the data the card shows.

The text is self-contained: results, which providers answered or dropped out and why, how
each filter was expressed, what the filters removed, warnings and — in research mode — how
the requests were split between the paid and the cheaper lane.
"""

from __future__ import annotations

from typing import Any

from .domains import FilterName
from .hits import RankedHit
from .outcome import ProviderReport, SearchOutcome
from .research import ResearchOutcome

__all__ = ["DATE_NOTE", "render_research", "render_search"]

DATE_NOTE = (
    "Dates: the newest date each provider vouches for — some report when a page was last "
    "updated rather than first published; 'unknown' means none could be determined."
)

_DROP_VERB = {
    "unconfigured": "is unconfigured",
    "failing": "failed",
    "not_available": "is not available on this model",
    "empty": "came up empty",
}


def _date(hit: RankedHit) -> str:
    if hit.published is None:
        return "date: unknown"
    return f"date: {hit.published.isoformat()} ({hit.date_source})"


def _found(hit: RankedHit, query: str) -> str:
    said = [
        f"{s.provider} #{s.position}"
        + (f' for "{s.query}"' if s.query is not None and s.query != query else "")
        for s in hit.sources[:6]
    ]
    more = len(hit.sources) - len(said)
    return ", ".join(said) + (f" and {more} more" if more > 0 else "")


def _result_lines(results: list[RankedHit], query: str) -> list[str]:
    lines: list[str] = []
    for rank, hit in enumerate(results, start=1):
        found = _found(hit, query)
        lines.append(f"{rank}. {hit.title}")
        lines.append(f"   {hit.url}")
        lines.append(f"   {_date(hit)} · found by {found}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return lines


def _status_line(report: ProviderReport) -> str:
    label = report.provider + (" (keyless fallback)" if report.role == "fallback" else "")
    if report.status == "answered":
        text = f"- {label}: answered {len(report.hits)} result(s)"
        if report.returned > len(report.hits) and report.removed:
            text += f" of {report.returned} (the rest removed by the domain filters)"
        return text
    status = report.status.replace("_", " ")
    return f"- {label}: {status} — {report.reason}" if report.reason else f"- {label}: {status}"


def _because(dropouts: list[ProviderReport]) -> str:
    return "; ".join(f"{r.provider} {_DROP_VERB[r.status]} ({r.reason})" for r in dropouts)


def _headline(outcome: SearchOutcome, mode: str) -> str:
    query = outcome.request.query
    count = len(outcome.results)
    answered = [r.provider for r in outcome.answered]
    label = f"web_search{' (research)' if mode == 'research' else ''}"
    if count == 0:
        return f'{label}: no results for "{query}" (strategy {outcome.strategy})'
    fallback = outcome.fallback
    if fallback is not None and fallback.status == "answered":
        how = f"answered by the keyless fallback {fallback.provider}"
    elif len(answered) > 1:
        how = " + ".join(answered) + ", fused"
    else:
        how = "answered by " + ", ".join(answered)
    return f'{label}: {count} result(s) for "{query}" (strategy {outcome.strategy}; {how})'


def _no_results(outcome: SearchOutcome) -> list[str]:
    removed = outcome.removed()
    returned = {r.provider: r.returned for r in outcome.reports if r.returned}
    if removed and not any(r.hits for r in outcome.reports):
        names = " and ".join(outcome.request.domains.describe(name) for name in removed)
        per = ", ".join(f"{name} {count}" for name, count in returned.items())
        return [
            f"No results: {names} removed every result the providers returned ({per}). The "
            "providers did answer; loosen the filter or search without it."
        ]
    if not any(r.status in ("answered", "empty") for r in outcome.reports):
        lead = "No results: no provider could answer"
    else:
        lead = "No results: the providers that answered found nothing"
    groups: dict[str, list[str]] = {}
    for report in outcome.dropouts:
        groups.setdefault(report.status.replace("_", " "), []).append(report.provider)
    said = [f"{status}: {', '.join(names)}" for status, names in groups.items()]
    lines = [lead + (f" ({'; '.join(said)})." if said else ".")]
    fallback = outcome.fallback
    if fallback is not None:
        verb = _DROP_VERB.get(fallback.status, fallback.status)
        lines.append(f"The keyless engine ({fallback.provider}) {verb}: {fallback.reason}.")
    lines.append("Each provider's reason is listed under Providers.")
    return lines


def _filter_lines(outcome: SearchOutcome) -> list[str]:
    request = outcome.request
    ran = [r for r in outcome.reports if r.status in ("answered", "empty")]
    lines: list[str] = []
    if request.time_range is not None:
        said = [f"{r.provider} {r.time_filter}" for r in ran if r.time_filter and r.time_enforced]
        lines.append(
            f"time_range {request.time_range}: "
            + ("; ".join(said) if said else "not applied (no provider that answered took it)")
        )
        for report in ran:
            if not report.time_enforced:
                lines.append(
                    f"{report.provider} could not express time_range {request.time_range} "
                    f"({report.time_filter}); it ran anyway, so its results may be older"
                )
    if request.domains.active:
        present: list[FilterName] = []
        if request.domains.allow:
            present.append("allow_domains")
        if request.domains.block:
            present.append("block_domains")
        named = " and ".join(request.domains.describe(name) for name in present)
        at_source = [r.provider for r in ran if r.domains_at_source]
        removed = outcome.removed()
        tally = ", ".join(f"{name} removed {n}" for name, n in removed.items()) or "none removed"
        source = f"; handed to {', '.join(at_source)} at the source" if at_source else ""
        lines.append(f"{named}: enforced on every provider's results ({tally}){source}")
    return lines


def _provider_data(report: ProviderReport) -> dict[str, Any]:
    return {
        "provider": report.provider,
        "role": report.role,
        "query": report.query,
        "status": report.status,
        "reason": report.reason,
        "paid": report.paid,
        "returned": report.returned,
        "kept": len(report.hits),
        "removed": dict(report.removed),
        "requests": report.requests,
        "timed_out": report.timed_out,
        "elapsed_ms": round(report.elapsed_ms, 1),
        "notes": list(report.notes),
    }


def _result_data(results: list[RankedHit]) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "title": hit.title,
            "url": hit.url,
            "snippet": hit.snippet,
            "published": hit.published.isoformat() if hit.published else "unknown",
            "date_source": hit.date_source,
            "providers": list(hit.providers),
            "sources": [
                {"provider": s.provider, "position": s.position, "query": s.query}
                for s in hit.sources
            ],
            "score": round(hit.score, 5),
        }
        for rank, hit in enumerate(results, start=1)
    ]


def _base_data(outcome: SearchOutcome, mode: str, warnings: list[str]) -> dict[str, Any]:
    fallback = outcome.fallback
    request = outcome.request
    return {
        "query": request.query,
        "strategy": outcome.strategy,
        "mode": mode,
        "time_range": request.time_range,
        "allow_domains": list(request.domains.allow),
        "block_domains": list(request.domains.block),
        "providers": [_provider_data(r) for r in outcome.reports],
        "fallback": None
        if fallback is None
        else {
            "provider": fallback.provider,
            "status": fallback.status,
            "reason": fallback.reason,
            "because": [
                {"provider": r.provider, "status": r.status, "reason": r.reason}
                for r in outcome.dropouts
            ],
        },
        "removed_by_filters": dict(outcome.removed()),
        "warnings": warnings,
        "notes": outcome.notes,
    }


def _tail(outcome: SearchOutcome, warnings: list[str]) -> list[str]:
    lines = ["", "Providers:", *(_status_line(r) for r in outcome.reports)]
    fallback = outcome.fallback
    if fallback is not None and fallback.status == "answered" and outcome.dropouts:
        lines.append(
            f"Fallback: the keyless engine ({fallback.provider}) answered because "
            f"{_because(outcome.dropouts)}."
        )
    filters = _filter_lines(outcome)
    if filters:
        lines += ["", "Filters:", *(f"- {line}" for line in filters)]
    if warnings:
        lines += ["", "Warnings:", *(f"- {w}" for w in dict.fromkeys(warnings))]
    return lines


def render_search(outcome: SearchOutcome) -> tuple[str, dict[str, Any]]:
    """The model's text and the card's data for a standard search."""
    lines = [_headline(outcome, "standard")]
    if outcome.results:
        lines += [DATE_NOTE, "", *_result_lines(outcome.results, outcome.request.query)]
    else:
        lines += _no_results(outcome)
    lines += _tail(outcome, outcome.warnings)
    data = _base_data(outcome, "standard", outcome.warnings)
    data["results"] = _result_data(outcome.results)
    data["requests"] = {"total": outcome.requests, "paid": outcome.paid_requests}
    return "\n".join(lines), data


def _split_lines(outcome: ResearchOutcome) -> list[str]:
    primary = outcome.primary
    asked = [r.provider for r in primary.reports if r.asked]
    lines = [
        "",
        "Requests:",
        f"- primary query on strategy {primary.strategy}: {', '.join(asked) or 'no provider'} "
        f"({primary.paid_requests} paid request(s))",
    ]
    paid = [f for f in outcome.follow_ups if f.lane == "paid"]
    free = [f for f in outcome.follow_ups if f.lane == "free"]
    lines.append(
        f"- {len(outcome.follow_ups)} follow-up variant(s): {len(paid)} on the paid lane"
        + (f" ({outcome.paid_lane})" if paid else "")
        + f", {len(free)} on the cheaper lane (SearXNG if configured, else the keyless engine)"
    )
    for follow in outcome.follow_ups:
        tried = ", then ".join(
            f"{r.provider} {'answered ' + str(len(r.hits)) if r.hits else r.status}"
            for r in follow.reports
        )
        lines.append(f"  - [{follow.lane} lane] {follow.query} → {tried}")
    lines.append(
        f"- paid requests in total: {outcome.paid_requests} (at most "
        f"{outcome.paid_cap} follow-up(s) may use a paid provider: live setting "
        "web_search_research_paid_cap)"
    )
    if outcome.model_variants:
        lines.append(
            f"- {outcome.model_variants} variant(s) written by the conversation's model "
            "(metered as web_search.variants)"
        )
    return lines


def _page_lines(outcome: ResearchOutcome) -> list[str]:
    lines: list[str] = []
    for page in outcome.pages:
        cut = f" (first {len(page.text):,} of {page.total_chars:,} characters)" if page.cut else ""
        lines += ["", f"## Page: {page.title or page.url}", f"{page.url}{cut}", "", page.text]
    return lines


def render_research(outcome: ResearchOutcome) -> tuple[str, dict[str, Any]]:
    """The model's text and the card's data for a research-mode search."""
    primary = outcome.primary
    count = len(outcome.results)
    lines = [
        f'web_search (research): {count} result(s) for "{primary.request.query}", ranked by '
        "relevance, freshness and authority over the query and its variants"
    ]
    if outcome.results:
        lines += [DATE_NOTE, "", *_result_lines(outcome.results, primary.request.query)]
    else:
        lines += _no_results(primary)
    lines += _split_lines(outcome)
    lines += _tail(primary, outcome.warnings)
    if outcome.notes:
        lines += ["", "Notes:", *(f"- {n}" for n in outcome.notes)]
    lines += _page_lines(outcome)
    data = _base_data(primary, "research", outcome.warnings)
    data["results"] = _result_data(outcome.results)
    data["requests"] = {"total": outcome.requests, "paid": outcome.paid_requests}
    data["research"] = {
        "paid_cap": outcome.paid_cap,
        "paid_lane": outcome.paid_lane,
        "model_variants": outcome.model_variants,
        "follow_ups": [
            {"query": f.query, "lane": f.lane, "providers": [_provider_data(r) for r in f.reports]}
            for f in outcome.follow_ups
        ],
        "pages": [
            {"url": p.url, "title": p.title, "chars": len(p.text), "total_chars": p.total_chars}
            for p in outcome.pages
        ],
        "notes": outcome.notes,
    }
    return "\n".join(lines), data
