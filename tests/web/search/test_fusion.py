"""Fusion: de-duplication by normalised URL and ranking by agreement and position."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from corral.web.search.fusion import RRF_K, fuse
from corral.web.search.hits import Hit
from corral.web.search.urls import url_key


def hits(provider: str, *urls: str) -> list[Hit]:
    return [
        Hit(title=u, url=u, snippet="", provider=provider, position=i)
        for i, u in enumerate(urls, start=1)
    ]


def test_agreement_outranks_a_lone_first_place() -> None:
    fused = fuse(
        [
            hits("a", "https://x.test/", "https://both.test/"),
            hits("b", "https://y.test/", "https://both.test/"),
        ]
    )
    assert [h.url for h in fused][:1] == ["https://both.test/"]
    assert fused[0].score == 2 / (RRF_K + 2)
    assert [s.provider for s in fused[0].sources] == ["a", "b"]


def test_ties_go_to_the_better_rank_then_the_earlier_list() -> None:
    fused = fuse([hits("a", "https://a1.test/", "https://a2.test/"), hits("b", "https://b1.test/")])
    assert [h.url for h in fused] == ["https://a1.test/", "https://b1.test/", "https://a2.test/"]


def test_a_page_repeated_in_one_list_counts_once() -> None:
    fused = fuse(
        [hits("a", "https://p.test/x", "http://www.p.test/x/"), hits("b", "https://q.test/")]
    )
    assert len(fused) == 2 and fused[0].score == 1 / (RRF_K + 1)


def test_snippet_and_date_come_from_the_best_ranked_source_that_has_them() -> None:
    from datetime import date

    a = Hit(title="A", url="https://p.test/", snippet="", provider="a", position=1)
    b = Hit(
        title="B",
        url="https://p.test",
        snippet="from b",
        provider="b",
        position=3,
        published=date(2024, 5, 1),
        date_field="page_age",
    )
    [one] = fuse([[a], [b]])
    assert (one.title, one.snippet, one.published, one.date_source) == (
        "A",
        "from b",
        date(2024, 5, 1),
        "b page_age",
    )


def test_url_key_ignores_spelling_but_not_content() -> None:
    same = [
        "https://www.Example.com/a/b/?utm_source=x&q=1&r=2#frag",
        "http://example.com/a/b?r=2&q=1",
        "https://example.com:443/a/%62?q=1&r=2&gclid=abc",
    ]
    assert len({url_key(u) for u in same}) == 1
    assert url_key("https://example.com/a?q=1") != url_key("https://example.com/a?q=2")
    assert url_key("https://example.com:8443/a") != url_key("https://example.com/a")
    assert url_key("https://example.com/A") != url_key("https://example.com/a")


@given(
    path=st.lists(st.text("abcxyz-_~.", min_size=1, max_size=6), max_size=4),
    params=st.dictionaries(
        st.text("abq", min_size=1, max_size=3), st.text("xyz1", max_size=3), max_size=3
    ),
    tracking=st.booleans(),
)
def test_url_key_is_stable_under_tracking_and_www(
    path: list[str], params: dict[str, str], tracking: bool
) -> None:
    from urllib.parse import urlencode

    base = "https://site.test/" + "/".join(path)
    query = urlencode(params)
    plain = base + (f"?{query}" if query else "")
    noisy = (
        base.replace("https://", "http://www.")
        + "/?"
        + urlencode({**params, **({"utm_medium": "x"} if tracking else {})})
        + "#part"
    )
    assert url_key(plain) == url_key(noisy)


@given(st.lists(st.lists(st.integers(0, 30), max_size=12), max_size=5))
def test_fusion_keeps_every_page_once(lists: list[list[int]]) -> None:
    fused = fuse(
        [hits(f"p{i}", *(f"https://h{n}.test/" for n in urls)) for i, urls in enumerate(lists)]
    )
    expected = {f"https://h{n}.test/" for urls in lists for n in urls}
    assert sorted(h.url for h in fused) == sorted(expected)
    assert all(a.score >= b.score for a, b in pairwise(fused))
