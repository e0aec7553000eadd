"""Research mode: the lane split under the paid cap, model-written variants, page text."""

from __future__ import annotations

from typing import Any

from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from corral.tools.services import Services
from tests.web.search.conftest import (
    OpenSearch,
    Sites,
    json_reply,
    query_of,
    searxng_answer,
    tavily_answer,
)
from tests.web.search.test_native import Conversation, Recorder

ARTICLE = (
    "<html><head><title>Corral design</title></head><body><article><h1>Corral design</h1>"
    + "".join(
        f"<p>Paragraph {i} explains how gates and alleys guide the herd.</p>" for i in range(10)
    )
    + "</article></body></html>"
)


def lines_after(text: str, heading: str) -> list[str]:
    block = text.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


async def test_follow_ups_split_between_lanes_under_the_paid_cap(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200, tavily_answer({"title": "T", "url": "https://t.example/", "content": "t"})
    )
    sites.searxng.routes["/search"] = json_reply(
        200, searxng_answer({"title": "S", "url": "https://s.example/", "content": "s"})
    )
    platform = await open_search(
        web_search_auto_providers=1,
        web_search_research_variants=3,
        web_search_research_paid_cap=1,
    )
    result = await platform.call_tool(
        "web_search", {"query": "how to build a corral", "mode": "research"}
    )
    assert not result.is_error, result.text
    tavily_queries = [query_of(s)["query"] for s in sites.tavily.requests]
    searx_queries = sorted(query_of(s)["q"] for s in sites.searxng.requests)
    year = str(__import__("datetime").date.today().year)
    assert tavily_queries == ["how to build a corral", "build corral"]
    assert searx_queries == sorted([f"build corral {year}", '"build corral"'])
    assert sites.brave.requests == [] and sites.duckduckgo.requests == []
    split = lines_after(result.text, "Requests:")
    assert split[0] == "- primary query on strategy auto: tavily (1 paid request(s))"
    assert split[1].startswith("- 3 follow-up variant(s): 1 on the paid lane (tavily), 2 on")
    assert "  - [paid lane] build corral → tavily answered 1" in split
    assert split[-1].startswith("- paid requests in total: 2 (at most 1 follow-up(s)")
    assert result.data is not None
    assert result.data["requests"] == {"total": 4, "paid": 2}
    assert "model-written query variants skipped: this call has no conversation model" in (
        result.text
    )


async def test_a_zero_cap_keeps_every_follow_up_off_paid_providers(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.tavily.routes["/search"] = json_reply(
        200, tavily_answer({"title": "T", "url": "https://t.example/"})
    )
    platform = await open_search(
        searxng=False, web_search_auto_providers=1, web_search_research_paid_cap=0
    )
    result = await platform.call_tool("web_search", {"query": "corral gates", "mode": "research"})
    assert len(sites.tavily.requests) == 1  # the primary query only
    assert len(sites.duckduckgo.requests) == 3  # no SearXNG: the keyless engine is the lane
    assert "paid requests in total: 1" in result.text


async def test_model_written_variants_are_metered_and_used(
    open_search: OpenSearch, sites: Sites
) -> None:
    asked: list[str] = []

    def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(str(info.instructions))
        return ModelResponse(
            parts=[TextPart("1. livestock pen layout\n- cattle handling facility design\n")],
            usage=RequestUsage(input_tokens=50, output_tokens=12),
        )

    recorder = Recorder()
    platform = await open_search(tavily=False, brave=False, web_search_research_variants=2)
    result = await platform.call_tool(
        "web_search",
        {"query": "corral layout", "mode": "research"},
        services=Services(
            conversation_model=Conversation("function:writer", FunctionModel(write)),
            usage=recorder,
        ),
    )
    assert "Rewrite the user's web search query into 2" in asked[0]
    assert sorted(query_of(s)["q"] for s in sites.searxng.requests) == [
        "cattle handling facility design",
        "corral layout",
        "livestock pen layout",
    ]
    [record] = recorder.records
    assert record.source == "web_search.variants" and record.output_tokens == 12
    assert "2 variant(s) written by the conversation's model" in result.text


async def test_fetch_top_attaches_pages_and_warns_about_unreadable_ones(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.pages.page("/design", ARTICLE)
    sites.pages.page("/gone", "not here", status=404, content_type="text/plain")
    good, gone = sites.url("pages", "/design"), sites.url("pages", "/gone")
    sites.searxng.routes["/search"] = json_reply(
        200,
        searxng_answer(
            {"title": "Design", "url": good, "content": "d", "publishedDate": "2025-01-01"},
            {"title": "Gone", "url": gone, "content": "g"},
        ),
    )
    platform = await open_search(
        tavily=False, brave=False, web_search_research_variants=0, web_search_fetch_top_chars=500
    )
    result = await platform.call_tool(
        "web_search", {"query": "corral design", "mode": "research", "fetch_top": 2}
    )
    text = result.text
    assert f"## Page: Corral design\n{good} (first 500 of " in text
    assert "Paragraph 0 explains how gates and alleys guide the herd." in text
    assert f"- page could not be read: {gone} (it answered HTTP 404 Not Found)" in text
    data: dict[str, Any] = result.data or {}
    assert [p["url"] for p in data["research"]["pages"]] == [good]


async def test_fetch_top_outside_research_mode_is_a_skipped_step(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.searxng.routes["/search"] = json_reply(
        200, searxng_answer({"title": "S", "url": "https://s.example/"})
    )
    platform = await open_search(tavily=False, brave=False)
    result = await platform.call_tool("web_search", {"query": "q", "fetch_top": 2})
    warnings = result.text.split("Warnings:")[1]
    assert "fetch_top=2 was skipped: page text is attached in research mode only" in warnings
    assert sites.pages.requests == []


async def test_a_failing_model_step_is_a_warning(open_search: OpenSearch, sites: Sites) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise UnexpectedModelBehavior("the model returned nothing usable")

    platform = await open_search(tavily=False, brave=False, web_search_research_variants=1)
    result = await platform.call_tool(
        "web_search",
        {"query": "corral", "mode": "research"},
        services=Services(
            conversation_model=Conversation("function:broken", FunctionModel(broken)),
            usage=Recorder(),
        ),
    )
    warnings = result.text.split("Warnings:")[1]
    assert "model-written query variants skipped: function:broken failed" in warnings
    assert len(sites.searxng.requests) == 2  # the deterministic variant still ran
