"""Tavily: ``POST /search`` with a bearer key; filters by time window and domains itself.

Request fields used: ``query``, ``max_results`` (at most 20), ``search_depth`` (basic, one
credit), ``topic`` (general), ``time_range`` (day/week/month/year), ``include_domains`` /
``exclude_domains``, ``include_answer`` / ``include_raw_content`` / ``include_images``
(off). Answer: ``results[]`` of ``title``, ``url``, ``content`` (the snippet), ``score`` and,
where Tavily knows one, ``published_date``. Errors carry ``{"detail": {"error": …}}`` with
400, 401, 403, 429, 432 (plan limit) or 433 (pay-as-you-go limit).
"""

from __future__ import annotations

from typing import Any

from ..dates import parse_date
from ..env import SearchEnv
from ..hits import Hit
from ..provider import ProviderAnswer, ProviderFailed, ProviderSkipped
from ..request import SearchRequest
from ._api import call_json, text

__all__ = ["Tavily"]

MAX_RESULTS = 20


def _detail(data: Any) -> str | None:
    if isinstance(data, dict):
        detail = data.get("detail")
        if isinstance(detail, dict) and isinstance(detail.get("error"), str):
            return str(detail["error"])
        if isinstance(detail, str):
            return detail
    return None


class Tavily:
    """The Tavily search API (paid, keyed)."""

    name = "tavily"
    paid = True
    accepts_domains = True

    async def _key(self, env: SearchEnv) -> str:
        key = await env.secret("tavily", env.settings.tavily_api_key)
        if key is None:
            raise ProviderSkipped(
                "unconfigured",
                "no API key; set tavily_api_key (CORRAL_TAVILY_API_KEY) or store a 'tavily' "
                "credential",
            )
        return key

    async def ready(self, env: SearchEnv) -> None:
        await self._key(env)

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        key = await self._key(env)
        body: dict[str, Any] = {
            "query": request.query,
            "max_results": min(request.max_results, MAX_RESULTS),
            "search_depth": "basic",
            "topic": "general",
            "include_answer": False,
            "include_raw_content": False,
            "include_images": False,
        }
        if request.time_range is not None:
            body["time_range"] = request.time_range
        if request.domains.allow:
            body["include_domains"] = list(request.domains.allow)
        if request.domains.block:
            body["exclude_domains"] = list(request.domains.block)
        data = await call_json(
            env,
            "Tavily",
            env.settings.tavily_api_url,
            method="POST",
            headers={"Authorization": f"Bearer {key}"},
            body=body,
            detail=_detail,
        )
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise ProviderFailed("Tavily's answer has no 'results' list")
        hits = [
            Hit(
                title=text(item.get("title")),
                url=item["url"],
                snippet=text(item.get("content")),
                provider=self.name,
                position=rank,
                published=parse_date(item.get("published_date"), now=env.clock()),
                date_field="published_date",
                query=request.query,
            )
            for rank, item in enumerate(
                (r for r in results if isinstance(r, dict) and isinstance(r.get("url"), str)),
                start=1,
            )
        ]
        return ProviderAnswer(
            hits=tuple(hits),
            time_filter=f"time_range={request.time_range}" if request.time_range else None,
            domains_at_source=request.domains.active,
        )
