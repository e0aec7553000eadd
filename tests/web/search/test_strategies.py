"""Strategies through the whole pipeline: auto's walk and fusion, the keyless fallback and
the reason each provider dropped out."""

from __future__ import annotations

from corral.tools.services import Services
from tests.web.conftest import Handler
from tests.web.search.conftest import (
    OpenSearch,
    Sites,
    brave_answer,
    ddg_page,
    json_reply,
    searxng_answer,
    tavily_answer,
)


def provider_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"- {name}"))


async def test_auto_fuses_by_agreement_and_position(open_search: OpenSearch, sites: Sites) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200,
        tavily_answer(
            {"title": "Only Tavily", "url": "https://solo.example/a", "content": "solo"},
            {
                "title": "Shared page",
                "url": "https://www.shared.example/guide/?utm_source=tavily",
                "content": "short",
            },
        ),
    )
    sites.brave.routes["/res/v1/web/search"] = json_reply(
        200,
        brave_answer(
            {"title": "Only Brave", "url": "https://brave-only.example/", "description": "b"},
            {
                "title": "Shared page (Brave)",
                "url": "http://shared.example/guide#top",
                "description": "the longer snippet",
                "page_age": "2024-01-02T00:00:00",
            },
        ),
    )
    platform = await open_search(searxng=False)
    result = await platform.call_tool("web_search", {"query": "corral guide"})
    assert not result.is_error, result.text
    assert result.data is not None
    urls = [r["url"] for r in result.data["results"]]
    # Both providers placed the shared page second: agreement beats a lone first place.
    assert urls[0] == "https://www.shared.example/guide/?utm_source=tavily"
    assert len(urls) == 3  # the two spellings of the shared page were merged
    shared = result.data["results"][0]
    assert shared["providers"] == ["tavily", "brave"]
    assert shared["published"] == "2024-01-02"
    assert "found by tavily #2, brave #2" in result.text
    assert "(strategy auto; tavily + brave, fused)" in result.text.splitlines()[0]
    assert sites.searxng.requests == [] and sites.duckduckgo.requests == []


async def test_auto_walks_on_when_a_provider_fails(open_search: OpenSearch, sites: Sites) -> None:
    sites.tavily.routes["/search"] = json_reply(429, {"detail": {"error": "Too many requests"}})
    sites.brave.routes["/res/v1/web/search"] = json_reply(
        200, brave_answer({"title": "B", "url": "https://b.example/", "description": "b"})
    )
    sites.searxng.routes["/search"] = json_reply(
        200, searxng_answer({"title": "S", "url": "https://s.example/", "content": "s"})
    )
    platform = await open_search()
    result = await platform.call_tool("web_search", {"query": "q"})
    assert len(sites.tavily.requests) == 1 and len(sites.searxng.requests) == 1
    assert "failing — Tavily answered HTTP 429" in provider_line(result.text, "tavily")
    assert "answered 1" in provider_line(result.text, "searxng")
    assert result.data is not None
    urls = {r["url"] for r in result.data["results"]}
    assert urls == {"https://b.example/", "https://s.example/"}


async def test_auto_asks_only_as_many_providers_as_configured(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200, tavily_answer({"title": "T", "url": "https://t.example/"})
    )
    platform = await open_search(web_search_auto_providers=1)
    result = await platform.call_tool("web_search", {"query": "q"})
    assert sites.brave.requests == [] and sites.searxng.requests == []
    assert "standby — not needed" in provider_line(result.text, "brave")


async def test_fallback_names_an_unconfigured_provider(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search(tavily=False)
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "tavily"})
    assert not result.is_error
    assert sites.tavily.requests == []
    assert sites.brave.requests == []  # a named strategy never walks to other paid providers
    assert "answered by the keyless fallback duckduckgo" in result.text.splitlines()[0]
    assert (
        "Fallback: the keyless engine (duckduckgo) answered because tavily is unconfigured "
        "(no API key; set tavily_api_key (CORRAL_TAVILY_API_KEY) or store a 'tavily' "
        "credential)."
    ) in result.text
    assert result.data is not None
    assert result.data["fallback"]["because"] == [
        {
            "provider": "tavily",
            "status": "unconfigured",
            "reason": "no API key; set tavily_api_key (CORRAL_TAVILY_API_KEY) or store a "
            "'tavily' credential",
        }
    ]


async def test_fallback_names_a_failing_provider_and_its_error(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.brave.routes["/res/v1/web/search"] = json_reply(
        429,
        {"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "Slow down."}},
    )
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search()
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "brave"})
    assert (
        "Fallback: the keyless engine (duckduckgo) answered because brave failed (Brave "
        "answered HTTP 429 Too Many Requests: rate limit or quota reached; retry later or use "
        "another provider (RATE_LIMITED: Slow down.))."
    ) in result.text


async def test_fallback_names_a_provider_that_came_up_empty(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search()
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "searxng"})
    assert "answered because searxng came up empty (it returned no results)." in result.text


async def test_a_provider_that_times_out_is_a_warning(
    open_search: OpenSearch, sites: Sites
) -> None:
    def stall(handler: Handler) -> None:
        sites.brave.stopping.wait()  # released when the server closes at the end of the test

    sites.brave.routes["/res/v1/web/search"] = stall
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search(web_search_timeout_ms=500)
    result = await platform.call_tool("web_search", {"query": "q", "strategy": "brave"})
    assert "brave failed (timed out after 500 ms)" in result.text
    warnings = result.text.split("Warnings:")[1]
    assert "brave timed out" in warnings and "web_search_timeout_ms" in warnings


async def test_stored_credentials_configure_a_provider(
    open_search: OpenSearch, sites: Sites
) -> None:
    asked: list[tuple[str, str]] = []

    class Store:
        async def lookup(self, name: str, *, user_id: str) -> str | None:
            asked.append((name, user_id))
            return "tvly-stored-0123456789abcdef" if name == "tavily" else None

    sites.tavily.routes["/search"] = json_reply(
        200, tavily_answer({"title": "T", "url": "https://t.example/"})
    )
    platform = await open_search(tavily=False, brave=False, searxng=False)
    result = await platform.call_tool(
        "web_search", {"query": "q", "strategy": "tavily"}, services=Services(credentials=Store())
    )
    assert not result.is_error, result.text
    [seen] = sites.tavily.requests
    assert seen.headers["authorization"] == "Bearer tvly-stored-0123456789abcdef"
    assert [name for name, _ in asked] == ["tavily"] and asked[0][1]
    assert "tvly-stored" not in result.text


async def test_unknown_names_in_the_auto_order_are_reported(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.searxng.routes["/search"] = json_reply(
        200, searxng_answer({"title": "S", "url": "https://s.example/"})
    )
    platform = await open_search(web_search_auto_order="bing, searxng")
    result = await platform.call_tool("web_search", {"query": "q"})
    assert "web_search_auto_order names unknown providers, ignored: bing" in result.text
    assert sites.tavily.requests == [] and len(sites.searxng.requests) == 1
