"""The small parts: dates, domain filters, variants, ranking, the DuckDuckGo page reader."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from corral.errors import InvalidArguments
from corral.web.search.dates import parse_date
from corral.web.search.domains import DomainFilter
from corral.web.search.hits import RankedHit, Source
from corral.web.search.providers.duckduckgo import parse_results_page
from corral.web.search.ranking import authority, freshness, research_rank
from corral.web.search.variants import deterministic_variants, distinct
from tests.web.search.conftest import ddg_page

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-05-01", date(2024, 5, 1)),
        ("2024-05-01T12:30:00", date(2024, 5, 1)),
        ("2024-05-01T12:30:00.0000000Z", date(2024, 5, 1)),
        ("2024-05-01T23:30:00+02:00", date(2024, 5, 1)),
        ("Wed, 01 May 2024 12:00:00 GMT", date(2024, 5, 1)),
        ("April 30, 2025", date(2025, 4, 30)),
        ("Apr 30, 2025", date(2025, 4, 30)),
        ("30 April 2025", date(2025, 4, 30)),
        ("3 days ago", date(2025, 6, 12)),
        ("a week ago", date(2025, 6, 8)),
        ("2 hours ago", date(2025, 6, 15)),
        ("yesterday", date(2025, 6, 14)),
        ("unknown", None),
        ("", None),
        (None, None),
        (1714560000, None),
        ("2024", None),
        ("2031-01-01", None),
        ("1970-01-01", None),
        ("2024-02-30", None),
    ],
)
def test_parse_date(raw: object, expected: date | None) -> None:
    assert parse_date(raw, now=NOW) == expected


def test_domain_filter_covers_subdomains_only() -> None:
    rules = DomainFilter.parse(["Python.org.", "*.rust-lang.org"], ["wiki.python.org"])
    assert rules.allow == ("python.org", "rust-lang.org")
    assert rules.refusal("https://docs.python.org/3/") is None
    assert rules.refusal("https://python.org/") is None
    assert rules.refusal("https://notpython.org/") == "allow_domains"
    assert rules.refusal("https://wiki.python.org/moin") == "block_domains"
    assert rules.refusal("https://doc.rust-lang.org/") is None
    assert rules.refusal("not a url") == "allow_domains"
    assert DomainFilter.parse(["bücher.example"], None).allow == ("xn--bcher-kva.example",)


@pytest.mark.parametrize(
    "entry", ["https://python.org", "python.org/docs", "localhost", "a b.org", "x.org:80", ""]
)
def test_domain_filter_refuses_what_is_not_a_host_name(entry: str) -> None:
    with pytest.raises(InvalidArguments, match="bare host name"):
        DomainFilter.parse([entry], None)


def test_deterministic_variants() -> None:
    assert deterministic_variants("How do I build a corral?", year=2025) == [
        "build corral",
        "build corral 2025",
        '"build corral"',
        "build corral guide",
    ]
    assert deterministic_variants("corral 2019 census", year=2025) == [
        '"corral 2019 census"',
        "corral 2019 census guide",
    ]
    assert distinct(["A b", "a  B", "", "c"], besides="C") == ["A b"]


def test_research_ranking_weighs_freshness_and_authority() -> None:
    today = date(2025, 6, 15)

    def hit(url: str, score: float, published: date | None = None) -> RankedHit:
        return RankedHit(
            title=url,
            url=url,
            snippet="",
            published=published,
            date_source=None,
            sources=(Source(provider="p", position=1),),
            score=score,
        )

    assert authority("https://www.nasa.gov/x") == 1.0
    assert authority("https://www.ox.ac.uk/") == 1.0
    assert authority("https://en.wikipedia.org/wiki/Corral") == 0.8
    assert authority("https://docs.example.com/") == 0.7
    assert authority("https://www.pinterest.com/pin/1") == 0.1
    assert authority("https://blog.example.com/") == 0.4
    assert freshness(None, today) == 0.0
    assert freshness(today, today) == 1.0
    assert freshness(date(2024, 6, 15), today) == pytest.approx(0.5)
    ranked = research_rank(
        [
            hit("https://blog.example.com/old", 0.033, date(2015, 1, 1)),
            hit("https://agency.gov/new", 0.030, date(2025, 6, 1)),
        ],
        today=today,
    )
    assert [h.url for h in ranked] == ["https://agency.gov/new", "https://blog.example.com/old"]


def test_duckduckgo_page_reader_skips_ads_and_unwraps_links() -> None:
    page = ddg_page(
        {"title": "One", "url": "https://one.example/a?b=c&d=e", "snippet": "first <b>hit</b>"},
        {"title": "Two", "url": "https://two.example/", "timestamp": "2025-06-01T00:00:00"},
    )
    found = parse_results_page(page, query="q", now=NOW)
    assert [(h.url, h.title, h.snippet, h.published) for h in found] == [
        ("https://one.example/a?b=c&d=e", "One", "first hit", None),
        ("https://two.example/", "Two", "", date(2025, 6, 1)),
    ]
    assert parse_results_page("", query="q") == []
    assert (
        parse_results_page('<html><div class="no-results">No results.</div></html>', query="q")
        == []
    )
