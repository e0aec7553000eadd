"""Domain filters enforced on the way back, the empty-after-filter message, bad entries."""

from __future__ import annotations

from tests.web.search.conftest import (
    OpenSearch,
    Sites,
    brave_answer,
    ddg_page,
    json_reply,
    tavily_answer,
)

MIXED = brave_answer(
    {"title": "Docs", "url": "https://docs.python.org/3/", "description": "d"},
    {"title": "Elsewhere", "url": "https://elsewhere.example/python", "description": "e"},
    {"title": "Lookalike", "url": "https://notpython.org/", "description": "l"},
    {"title": "Main site", "url": "https://www.python.org/about/", "description": "m"},
    {"title": "Blocked", "url": "https://wiki.python.org/moin", "description": "b"},
)


async def test_filters_are_enforced_on_providers_that_ignore_them(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.brave.routes["/res/v1/web/search"] = json_reply(200, MIXED)
    platform = await open_search(tavily=False, searxng=False)
    result = await platform.call_tool(
        "web_search",
        {
            "query": "python",
            "strategy": "brave",
            "allow_domains": ["python.org"],
            "block_domains": ["wiki.python.org"],
        },
    )
    assert not result.is_error, result.text
    params = sites.brave.requests[0].path
    assert "python.org" not in params.split("q=")[0]  # Brave has no domain parameter
    assert result.data is not None
    assert [r["url"] for r in result.data["results"]] == [
        "https://docs.python.org/3/",
        "https://www.python.org/about/",
    ]
    assert result.data["removed_by_filters"] == {"allow_domains": 2, "block_domains": 1}
    assert (
        "- allow_domains [python.org] and block_domains [wiki.python.org]: enforced on every "
        "provider's results (allow_domains removed 2, block_domains removed 1)"
    ) in result.text
    assert "- brave: answered 2 result(s) of 5" in result.text


async def test_a_filter_that_removes_everything_is_named(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200,
        # Tavily was handed the filter and ignored it; the results are still removed.
        tavily_answer(
            {"title": "A", "url": "https://a.example/"},
            {"title": "B", "url": "https://b.example/"},
        ),
    )
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search(brave=False, searxng=False)
    result = await platform.call_tool(
        "web_search", {"query": "q", "strategy": "tavily", "allow_domains": ["python.org"]}
    )
    assert not result.is_error
    assert result.text.splitlines()[1] == (
        "No results: allow_domains [python.org] removed every result the providers returned "
        "(tavily 2, duckduckgo 1). The providers did answer; loosen the filter or search "
        "without it."
    )
    assert "keyless engine (duckduckgo) failed" not in result.text
    assert len(sites.duckduckgo.requests) == 1  # the fallback was tried before giving up


async def test_a_malformed_domain_is_refused_before_any_request(
    open_search: OpenSearch, sites: Sites
) -> None:
    platform = await open_search()
    result = await platform.call_tool(
        "web_search", {"query": "q", "allow_domains": ["https://python.org/docs"]}
    )
    assert result.error_code == "invalid_arguments"
    assert "'https://python.org/docs' is not a bare host name" in result.text
    assert all(server.requests == [] for server in sites.all)
