"""Each provider against a server speaking its real format, through the whole pipeline.

What each server *received* is asserted (fields, headers, the time_range dialect), and
what it answered (titles, snippets, dates, error statuses) must show in the tool result.
"""

from __future__ import annotations

import json

import pytest

from tests.web.search.conftest import (
    BRAVE_KEY,
    TAVILY_KEY,
    OpenSearch,
    Sites,
    brave_answer,
    ddg_page,
    json_reply,
    query_of,
    searxng_answer,
    tavily_answer,
)


async def test_tavily_request_and_answer(open_search: OpenSearch, sites: Sites) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200,
        tavily_answer(
            {
                "title": "Corral fencing guide",
                "url": "https://fences.example/guide",
                "content": "How to build a corral fence that holds.",
                "published_date": "Tue, 12 Nov 2024 08:30:00 GMT",
            },
            {"title": "Posts and rails", "url": "https://rails.example/", "content": "Rails."},
        ),
    )
    platform = await open_search(brave=False, searxng=False)
    result = await platform.call_tool(
        "web_search",
        {
            "query": "corral fencing",
            "strategy": "tavily",
            "time_range": "month",
            "allow_domains": ["fences.example", "rails.example"],
            "block_domains": ["spam.example"],
            "max_results": 7,
        },
    )
    assert not result.is_error, result.text
    [seen] = sites.tavily.requests
    assert seen.method == "POST" and seen.path == "/search"
    assert seen.headers["authorization"] == f"Bearer {TAVILY_KEY}"
    body = json.loads(seen.body)
    assert body["query"] == "corral fencing" and body["max_results"] == 7
    assert body["time_range"] == "month"
    assert body["include_domains"] == ["fences.example", "rails.example"]
    assert body["exclude_domains"] == ["spam.example"]
    assert body["include_raw_content"] is False
    text = result.text
    assert "1. Corral fencing guide" in text and "https://fences.example/guide" in text
    assert "date: 2024-11-12 (tavily published_date)" in text
    assert "date: unknown" in text
    assert "time_range month: tavily time_range=month" in text
    assert "handed to tavily at the source" in text
    assert TAVILY_KEY not in text
    assert result.data is not None
    assert [r["published"] for r in result.data["results"]] == ["2024-11-12", "unknown"]


async def test_brave_request_and_answer(open_search: OpenSearch, sites: Sites) -> None:
    sites.brave.routes["/res/v1/web/search"] = json_reply(
        200,
        brave_answer(
            {
                "title": "Herd <strong>handling</strong>",
                "url": "https://herd.example/handling",
                "description": "Moving cattle through a <strong>corral</strong> &amp; chute.",
                "page_age": "2025-03-04T10:00:00",
                "age": "March 4, 2025",
            },
            {
                "title": "Old barn notes",
                "url": "https://barn.example/notes",
                "description": "Notes.",
                "age": "3 days ago",
            },
        ),
    )
    platform = await open_search(tavily=False, searxng=False)
    result = await platform.call_tool(
        "web_search", {"query": "corral handling", "strategy": "brave", "time_range": "week"}
    )
    assert not result.is_error, result.text
    [seen] = sites.brave.requests
    assert seen.method == "GET" and seen.headers["x-subscription-token"] == BRAVE_KEY
    assert seen.headers["accept"] == "application/json"
    params = query_of(seen)
    assert params["q"] == "corral handling" and params["freshness"] == "pw"
    assert params["count"] == "10"
    text = result.text
    assert "1. Herd handling" in text
    assert "Moving cattle through a corral & chute." in text
    assert "date: 2025-03-04 (brave page_age)" in text
    assert "(brave age)" in text  # the prose age, read relative to now
    assert "time_range week: brave freshness=pw" in text


async def test_searxng_request_and_answer(open_search: OpenSearch, sites: Sites) -> None:
    sites.searxng.routes["/search"] = json_reply(
        200,
        searxng_answer(
            {
                "title": "Corral - Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Corral",
                "content": "A corral is an enclosure for livestock.",
                "publishedDate": "2024-06-01T00:00:00",
            },
            unresponsive=[["google", "timeout"], ["bing", "CAPTCHA"]],
        ),
    )
    platform = await open_search(tavily=False, brave=False)
    result = await platform.call_tool(
        "web_search", {"query": "corral", "strategy": "searxng", "time_range": "week"}
    )
    assert not result.is_error, result.text
    [seen] = sites.searxng.requests
    params = query_of(seen)
    assert seen.path.startswith("/search?")
    assert params == {"q": "corral", "format": "json", "pageno": "1", "time_range": "week"}
    text = result.text
    assert "date: 2024-06-01 (searxng publishedDate)" in text
    assert "google (timeout), bing (CAPTCHA)" in text.split("Warnings:")[1]


async def test_keyless_engine_request_and_page(open_search: OpenSearch, sites: Sites) -> None:
    sites.duckduckgo.page(
        "/html/",
        ddg_page(
            {
                "title": "Building a <b>corral</b>",
                "url": "https://build.example/corral?x=1",
                "snippet": "Step by step <b>corral</b> building.",
                "timestamp": "2024-09-15T00:00:00.0000000",
            },
            {"title": "Second", "url": "https://second.example/", "snippet": "More."},
        ),
    )
    platform = await open_search(tavily=False, brave=False, searxng=False)
    result = await platform.call_tool(
        "web_search", {"query": "build a corral", "time_range": "year"}
    )
    assert not result.is_error, result.text
    [seen] = sites.duckduckgo.requests
    assert seen.method == "POST"
    assert seen.headers["content-type"] == "application/x-www-form-urlencoded"
    assert query_of(seen) == {"q": "build a corral", "b": "", "kl": "wt-wt", "df": "y"}
    text = result.text
    assert "Sponsored" not in text  # the ad block is dropped
    assert "1. Building a corral\n   https://build.example/corral?x=1" in text
    assert "date: 2024-09-15 (duckduckgo timestamp)" in text
    assert "time_range year: duckduckgo df=y" in text


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}, "HTTP 401"),
        (429, {"detail": {"error": "Rate limit exceeded"}}, "HTTP 429"),
        (432, {"detail": {"error": "This request exceeds your plan's set usage limit"}}, "432"),
    ],
)
async def test_tavily_error_statuses_are_explained(
    open_search: OpenSearch, sites: Sites, status: int, payload: object, expected: str
) -> None:
    sites.tavily.routes["/search"] = json_reply(status, payload)
    sites.duckduckgo.page(
        "/html/", ddg_page({"title": "Fallback hit", "url": "https://f.example/"})
    )
    platform = await open_search(brave=False, searxng=False)
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "tavily"})
    assert not result.is_error
    line = next(x for x in result.text.splitlines() if x.startswith("- tavily:"))
    assert "failing" in line and expected in line
    assert json.dumps(payload).split('"error": "')[1].rstrip('"}') in line


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (
            422,
            {
                "type": "ErrorResponse",
                "error": {
                    "id": "5d83",
                    "status": 422,
                    "code": "SUBSCRIPTION_TOKEN_INVALID",
                    "detail": "The provided subscription token is invalid.",
                    "meta": {"component": "authentication"},
                },
                "time": 1663072993,
            },
            "SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid.",
        ),
        (
            429,
            {
                "type": "ErrorResponse",
                "error": {
                    "id": "e1",
                    "status": 429,
                    "code": "RATE_LIMITED",
                    "detail": "Request rate limit exceeded for plan.",
                    "meta": {"plan": "Free", "rate_limit": 1, "rate_current": 2},
                },
                "time": 1663072993,
            },
            "HTTP 429",
        ),
        (401, {"type": "ErrorResponse", "error": {"code": "UNAUTHORIZED"}}, "HTTP 401"),
    ],
)
async def test_brave_error_statuses_are_explained(
    open_search: OpenSearch, sites: Sites, status: int, payload: object, expected: str
) -> None:
    sites.brave.routes["/res/v1/web/search"] = json_reply(status, payload)
    platform = await open_search(tavily=False, searxng=False)
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "brave"})
    line = next(x for x in result.text.splitlines() if x.startswith("- brave:"))
    assert "failing" in line and expected in line


async def test_searxng_without_json_format_is_explained(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.searxng.page("/search", "<html>Forbidden</html>", status=403)
    platform = await open_search(tavily=False, brave=False)
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "searxng"})
    line = next(x for x in result.text.splitlines() if x.startswith("- searxng:"))
    assert "HTTP 403" in line


async def test_keyless_bot_challenge_is_a_failure_not_an_empty_answer(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.duckduckgo.page(
        "/html/", '<html><body><form id="challenge-form"></form></body></html>', status=202
    )
    platform = await open_search(tavily=False, brave=False, searxng=False)
    result = await platform.call_tool("web_search", {"query": "q"})
    assert result.is_error and result.error_code == "search_unavailable"
    assert "bot challenge" in result.text
