"""Native search on the conversation's own model, metered, and skipped where unavailable.

The Anthropic case is the real wire format: pydantic-ai's Anthropic model, pointed by base
URL at a loopback server that answers like the Messages API does with its ``web_search``
server tool (``server_tool_use`` + ``web_search_tool_result`` blocks, ``usage.server_tool_use
.web_search_requests``). The model's own client reaches that server directly, as it would
reach the vendor; only search providers go through the fetch pipeline.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
)
from pydantic_ai.models import Model, override_allow_model_requests
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import RequestUsage

from corral.service_protocols import UsageRecord
from corral.tools.services import Services
from tests.web.conftest import LoopbackServer
from tests.web.search.conftest import OpenSearch, Sites, ddg_page, json_reply, tavily_answer


@dataclass(frozen=True)
class Conversation:
    """What the runtime provides as ``services.conversation_model``."""

    spec: str
    model: Model


@dataclass
class Recorder:
    """A usage recorder that keeps what it was given."""

    records: list[UsageRecord] = field(default_factory=list)

    async def record(self, usage: UsageRecord) -> None:
        self.records.append(usage)


def anthropic_message(*, error_code: str | None = None) -> dict[str, Any]:
    results: Any = (
        {"type": "web_search_tool_result_error", "error_code": error_code}
        if error_code
        else [
            {
                "type": "web_search_result",
                "url": "https://example.org/corral",
                "title": "Corral - Example",
                "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1",
                "page_age": "April 30, 2025",
            },
            {
                "type": "web_search_result",
                "url": "https://docs.example.org/fences",
                "title": "Fences",
                "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi2",
                "page_age": None,
            },
        ]
    )
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "corral fencing"},
            },
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": results},
            {
                "type": "text",
                "text": "https://example.org/corral | Corral - Example | 2025-04-30 | How "
                "corrals are built.\nhttps://docs.example.org/fences | Fences | unknown | "
                "Fence materials compared.",
            },
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1200,
            "output_tokens": 80,
            "server_tool_use": {"web_search_requests": 1},
        },
    }


@pytest.fixture
def vendor(make_server: Callable[..., LoopbackServer]) -> Iterator[LoopbackServer]:
    """A loopback server answering Anthropic's Messages API."""
    server = make_server("127.0.0.1")
    server.routes["/v1/messages"] = json_reply(200, anthropic_message())
    with override_allow_model_requests(True):
        yield server


@pytest.fixture
async def claude(vendor: LoopbackServer) -> AsyncIterator[Conversation]:
    """Claude as the conversation's model, its API at the ``vendor`` server (no retries)."""
    client = AsyncAnthropic(api_key="sk-ant-test", base_url=vendor.url(""), max_retries=0)
    model = AnthropicModel("claude-sonnet-5-5", provider=AnthropicProvider(anthropic_client=client))
    yield Conversation("anthropic:claude-sonnet-5-5", model)
    await client.close()


async def test_anthropic_native_search_is_read_and_metered(
    open_search: OpenSearch, sites: Sites, vendor: LoopbackServer, claude: Conversation
) -> None:
    recorder = Recorder()
    platform = await open_search(web_search_native_fee_usd=0.01)
    result = await platform.call_tool(
        "web_search",
        {
            "query": "corral fencing",
            "strategy": "native",
            "time_range": "week",
            "allow_domains": ["example.org"],
            "block_domains": ["spam.example"],
        },
        services=Services(conversation_model=claude, usage=recorder),
        conversation_id="conv-1",
    )
    assert not result.is_error, result.text
    [seen] = vendor.requests
    sent = json.loads(seen.body)
    assert sent["model"] == "claude-sonnet-5-5" and sent["messages"][0]["content"][0]["text"] == (
        "corral fencing"
    )
    [tool] = sent["tools"]
    # The tool version follows the model (newer models take a newer web_search tool).
    assert tool["type"].startswith("web_search_2") and tool["max_uses"] == 1
    # Anthropic takes one list or the other: the allow list goes, the block list is ours.
    assert tool["allowed_domains"] == ["example.org"] and tool["blocked_domains"] is None
    assert result.data is not None
    assert [(r["url"], r["published"], r["snippet"]) for r in result.data["results"]] == [
        ("https://example.org/corral", "2025-04-30", "How corrals are built."),
        ("https://docs.example.org/fences", "unknown", "Fence materials compared."),
    ]
    assert "date: 2025-04-30 (native page_age)" in result.text
    assert (
        "native could not express time_range week (no recency filter on "
        "anthropic:claude-sonnet-5-5's search"
    ) in result.text
    assert "it ran anyway, so its results may be older" in result.text
    [record] = recorder.records
    assert record.source == "web_search.native" and record.model == "anthropic:claude-sonnet-5-5"
    assert (record.input_tokens, record.output_tokens) == (1200, 80)
    assert record.fee_usd == pytest.approx(0.01) and record.details == {"web_searches": 1}
    assert record.conversation_id == "conv-1" and record.user_id
    assert sites.tavily.requests == [] and sites.duckduckgo.requests == []


async def test_vendor_search_error_is_a_failure_with_fallback(
    open_search: OpenSearch, sites: Sites, vendor: LoopbackServer, claude: Conversation
) -> None:
    vendor.routes["/v1/messages"] = json_reply(
        200, anthropic_message(error_code="too_many_requests")
    )
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    recorder = Recorder()
    platform = await open_search()
    result = await platform.call_tool(
        "web_search",
        {"query": "q", "strategy": "native"},
        services=Services(conversation_model=claude, usage=recorder),
    )
    assert "native failed (the vendor's search reported 'too_many_requests')" in result.text
    assert len(recorder.records) == 1  # the tokens were spent even though the search failed


async def test_vendor_http_error_is_a_failure(
    open_search: OpenSearch, sites: Sites, vendor: LoopbackServer, claude: Conversation
) -> None:
    vendor.routes["/v1/messages"] = json_reply(
        429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    )
    recorder = Recorder()
    platform = await open_search()
    result = await platform.call_tool(
        "web_search",
        {"query": "q", "strategy": "native"},
        services=Services(conversation_model=claude, usage=recorder),
    )
    line = next(x for x in result.text.splitlines() if x.startswith("- native"))
    assert "failing — anthropic:claude-sonnet-5-5 failed" in line and "429" in line
    assert recorder.records == []


async def test_a_model_without_native_search_is_skipped_not_switched(
    open_search: OpenSearch, sites: Sites
) -> None:
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    model = OpenAIChatModel(
        "gpt-4o", provider=OpenAIProvider(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    )
    platform = await open_search()
    result = await platform.call_tool(
        "web_search",
        {"query": "q", "strategy": "native"},
        services=Services(
            conversation_model=Conversation("openai:gpt-4o", model), usage=Recorder()
        ),
    )
    assert not result.is_error
    assert (
        "answered because native is not available on this model (openai:gpt-4o is not a model "
        "whose vendor offers native web search)."
    ) in result.text
    # Never quietly another vendor: the configured paid providers were not asked either.
    assert sites.tavily.requests == [] and sites.brave.requests == []


@pytest.mark.parametrize(
    ("with_model", "reason"),
    [
        (False, "this call has no conversation model"),
        (True, "no usage recorder in this context, so model use could not be metered"),
    ],
)
async def test_native_needs_a_model_and_a_meter(
    open_search: OpenSearch,
    sites: Sites,
    vendor: LoopbackServer,
    claude: Conversation,
    with_model: bool,
    reason: str,
) -> None:
    sites.duckduckgo.page("/html/", ddg_page({"title": "K", "url": "https://k.example/"}))
    platform = await open_search()
    services = Services(conversation_model=claude) if with_model else Services()
    result = await platform.call_tool(
        "web_search", {"query": "q", "strategy": "native"}, services=services
    )
    assert f"native is not available on this model ({reason}" in result.text
    assert vendor.requests == []


async def test_native_in_the_auto_order_is_fused_with_others(
    open_search: OpenSearch, sites: Sites
) -> None:
    """A FunctionModel fake returning the built-in tool parts an OpenAI Responses model
    would (a ``web_search`` call whose return lists its ``sources``)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert [t.kind for t in info.model_request_parameters.native_tools] == ["web_search"]
        return ModelResponse(
            parts=[
                NativeToolCallPart(tool_name="web_search", args={"query": "q"}, tool_call_id="ws1"),
                NativeToolReturnPart(
                    tool_name="web_search",
                    content={
                        "status": "completed",
                        "sources": [
                            {"type": "url", "url": "https://shared.example/"},
                            {"type": "url", "url": "https://native.example/"},
                        ],
                    },
                    tool_call_id="ws1",
                ),
                TextPart("https://shared.example/ | Shared | 2024-02-03 | Both found it."),
            ],
            usage=RequestUsage(input_tokens=300, output_tokens=40),
        )

    sites.tavily.routes["/search"] = json_reply(
        200,
        tavily_answer(
            {"title": "T", "url": "https://tavily.example/"},
            {"title": "Shared", "url": "https://shared.example/"},
        ),
    )
    recorder = Recorder()
    platform = await open_search(web_search_auto_order="native,tavily")
    result = await platform.call_tool(
        "web_search",
        {"query": "q"},
        services=Services(
            conversation_model=Conversation("function:fake", FunctionModel(respond)),
            usage=recorder,
        ),
    )
    assert result.data is not None
    assert result.data["results"][0]["url"] == "https://shared.example/"
    assert result.data["results"][0]["providers"] == ["native", "tavily"]
    assert result.data["results"][0]["published"] == "2024-02-03"
    [record] = recorder.records
    assert record.details == {"web_searches": 1} and record.fee_usd == pytest.approx(0.01)
