"""Native search: the web search built into the conversation's model vendor.

It runs on exactly the conversation's model through pydantic-ai's ``WebSearchTool``
(Anthropic's ``web_search`` server tool, OpenAI Responses' ``web_search``, Google, Groq,
xAI…). A model whose class or profile does not list ``WebSearchTool`` is skipped as "not
available on this model" — never replaced by another vendor's model. The model is asked to
search once and list what it found; results are read from the vendor's own search result
parts (Anthropic ``web_search_tool_result`` items: ``url``, ``title``, ``page_age``; OpenAI
``web_search_call`` sources) and the listed lines supply snippets. Tokens and the
per-search fee are recorded with the conversation's usage recorder before anything else.

Domain filters go to the vendor where its adapter applies them (Anthropic takes only one of
allow/block); the tool has no recency filter, so a time_range is asked for in the prompt
and the result says it could not be enforced.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..dates import parse_date
from ..env import SearchEnv
from ..hits import Hit
from ..model_access import ModelAccess, model_access
from ..provider import ProviderAnswer, ProviderFailed, ProviderSkipped
from ..request import SearchRequest
from ._api import text

__all__ = ["NativeSearch"]

_WINDOW = {"day": "past day", "week": "past week", "month": "past month", "year": "past year"}
_MAX_TOKENS = 2048


def _instructions(request: SearchRequest) -> str:
    window = f" Prefer pages from the {_WINDOW[request.time_range]}." if request.time_range else ""
    return (
        "You are a search backend, not an assistant. Call the web_search tool once with the "
        f"user's query.{window} Then list every result it returned, best first, one per line "
        "as: URL | title | publication date (YYYY-MM-DD) or unknown | one-sentence summary. "
        "Write nothing else and do not answer the query."
    )


def _result_items(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, dict):
        for key in ("sources", "results"):
            if isinstance(content.get(key), list):
                return _result_items(content[key])
        if content.get("type") == "web_search_tool_result_error" or "error_code" in content:
            raise ProviderFailed(
                f"the vendor's search reported {content.get('error_code', 'an error')!r}"
            )
        return []
    if isinstance(content, list):
        return [
            item for item in content if isinstance(item, dict) and isinstance(item.get("url"), str)
        ]
    return []


def _listed_lines(response_text: str) -> dict[str, list[str]]:
    listed: dict[str, list[str]] = {}
    for line in response_text.splitlines():
        cells = [cell.strip() for cell in line.strip().lstrip("-*0123456789. ").split("|")]
        if cells and cells[0].startswith(("http://", "https://")):
            listed.setdefault(cells[0], cells)
    return listed


class NativeSearch:
    """Search through the conversation model's vendor (paid: tokens plus a per-search fee)."""

    name = "native"
    paid = True
    accepts_domains = True

    def _access(self, env: SearchEnv) -> ModelAccess:
        from pydantic_ai.native_tools import SUPPORTED_NATIVE_TOOLS, WebSearchTool

        access = model_access(env)
        if isinstance(access, str):
            raise ProviderSkipped("not_available", access)
        supported = access.model.profile.get("supported_native_tools", SUPPORTED_NATIVE_TOOLS)
        if WebSearchTool not in supported:
            raise ProviderSkipped(
                "not_available",
                f"{access.spec} is not a model whose vendor offers native web search",
            )
        return access

    async def ready(self, env: SearchEnv) -> None:
        self._access(env)

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        from pydantic_ai.direct import model_request
        from pydantic_ai.exceptions import AgentRunError, ModelAPIError, UserError
        from pydantic_ai.messages import (
            ModelRequest,
            NativeToolCallPart,
            NativeToolReturnPart,
            TextPart,
        )
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.native_tools import WebSearchTool
        from pydantic_ai.settings import ModelSettings

        access = self._access(env)
        model = access.model
        allow, block = request.domains.allow, request.domains.block
        if allow and block and model.system == "anthropic":
            # Anthropic takes one list or the other; the stricter one goes to the vendor.
            block = ()
        tool = WebSearchTool(
            allowed_domains=list(allow) or None, blocked_domains=list(block) or None, max_uses=1
        )
        unsupported = model.unsupported_native_tool_settings(tool)
        if unsupported:
            tool = replace(
                tool,
                allowed_domains=None if "allowed_domains" in unsupported else tool.allowed_domains,
                blocked_domains=None if "blocked_domains" in unsupported else tool.blocked_domains,
                max_uses=None if "max_uses" in unsupported else tool.max_uses,
            )
        settings = ModelSettings(max_tokens=_MAX_TOKENS)
        if model.system == "openai":
            from pydantic_ai.models.openai import OpenAIResponsesModelSettings

            # Without it the Responses API leaves the sources out of web_search_call items.
            settings = OpenAIResponsesModelSettings(
                max_tokens=_MAX_TOKENS, openai_include_web_search_sources=True
            )
        try:
            response = await model_request(
                model,
                [ModelRequest.user_text_prompt(request.query, instructions=_instructions(request))],
                model_settings=settings,
                model_request_parameters=ModelRequestParameters(native_tools=[tool]),
            )
        except (ModelAPIError, AgentRunError, UserError) as exc:
            raise ProviderFailed(f"{access.spec} failed: {exc}") from None
        searches = sum(
            1
            for part in response.parts
            if isinstance(part, NativeToolCallPart) and part.tool_name == WebSearchTool.kind
        )
        searches = max(searches, int(getattr(response.usage, "web_searches", 0) or 0))
        await access.record(
            env,
            response,
            source="web_search.native",
            fee_usd=searches * env.config.native_fee_usd,
            details={"web_searches": searches},
        )
        said = "\n".join(p.content for p in response.parts if isinstance(p, TextPart))
        listed = _listed_lines(said)
        items: list[dict[str, Any]] = []
        for part in response.parts:
            if isinstance(part, NativeToolReturnPart) and part.tool_name == WebSearchTool.kind:
                items.extend(_result_items(part.content))
        if not items:
            items = [{"url": url} for url in listed]
        hits: list[Hit] = []
        seen: set[str] = set()
        for item in items:
            url = item["url"]
            if url in seen:
                continue
            seen.add(url)
            cells = listed.get(url, [])
            published = parse_date(item.get("page_age"), now=env.clock())
            field = "page_age"
            if published is None and len(cells) > 2:
                published, field = parse_date(cells[2], now=env.clock()), "listed date"
            hits.append(
                Hit(
                    title=text(item.get("title")) or (cells[1] if len(cells) > 1 else ""),
                    url=url,
                    snippet=cells[3] if len(cells) > 3 else "",
                    provider=self.name,
                    position=len(hits) + 1,
                    published=published,
                    date_field=field if published is not None else None,
                    query=request.query,
                )
            )
        return ProviderAnswer(
            hits=tuple(hits[: request.max_results]),
            requests=max(searches, 1),
            time_filter=(
                f"no recency filter on {access.spec}'s search: the {_WINDOW[request.time_range]} "
                "was asked for in the prompt, not enforced"
                if request.time_range
                else None
            ),
            time_enforced=request.time_range is None,
            domains_at_source=bool(tool.allowed_domains or tool.blocked_domains),
        )
