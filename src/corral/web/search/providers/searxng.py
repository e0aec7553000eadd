"""SearXNG: an instance's ``GET /search?format=json`` (no key; the instance URL is the setting).

Request parameters used: ``q``, ``format=json``, ``pageno=1`` and ``time_range`` (``day``,
``week``, ``month``, ``year``; engines without time-range support sit such a search out).
Answer: ``results[]`` of ``url``, ``title``, ``content`` (the snippet), ``engine(s)`` and
``publishedDate`` (ISO or null), plus ``unresponsive_engines`` as ``[name, error]`` pairs.
An instance without the JSON format enabled answers 403; its limiter answers 429.
SearXNG takes no domain filter parameter, so domain filters are enforced on its results.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from ..dates import parse_date
from ..env import SearchEnv
from ..hits import Hit
from ..provider import ProviderAnswer, ProviderFailed, ProviderSkipped
from ..request import SearchRequest
from ._api import call_json, text

__all__ = ["SearXNG"]


def _detail(data: Any) -> str | None:
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return None


def _search_url(base: str) -> str:
    base = base.strip()
    if base.rstrip("/").endswith("/search"):
        return base.rstrip("/")
    return base.rstrip("/") + "/search"


class SearXNG:
    """A SearXNG instance's JSON API (free, needs an instance URL)."""

    name = "searxng"
    paid = False
    accepts_domains = False

    async def _base(self, env: SearchEnv) -> str:
        base = await env.secret("searxng", env.settings.searxng_url)
        if base is None:
            raise ProviderSkipped(
                "unconfigured",
                "no instance URL; set searxng_url (CORRAL_SEARXNG_URL) or store a 'searxng' "
                "credential",
            )
        return base

    async def ready(self, env: SearchEnv) -> None:
        await self._base(env)

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        base = await self._base(env)
        params = {"q": request.query, "format": "json", "pageno": "1"}
        if request.time_range is not None:
            params["time_range"] = request.time_range
        data = await call_json(
            env, "SearXNG", f"{_search_url(base)}?{urlencode(params)}", detail=_detail
        )
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise ProviderFailed("SearXNG's answer has no 'results' list")
        hits: list[Hit] = []
        for item in results:
            if len(hits) >= request.max_results:
                break
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            published = parse_date(item.get("publishedDate"), now=env.clock())
            hits.append(
                Hit(
                    title=text(item.get("title"), markup=True),
                    url=item["url"],
                    snippet=text(item.get("content"), markup=True),
                    provider=self.name,
                    position=len(hits) + 1,
                    published=published,
                    date_field="publishedDate" if published is not None else None,
                    query=request.query,
                )
            )
        warnings: list[str] = []
        silent = data.get("unresponsive_engines") if isinstance(data, dict) else None
        if isinstance(silent, list) and silent:
            named = ", ".join(
                f"{pair[0]} ({pair[1]})" if isinstance(pair, list) and len(pair) > 1 else str(pair)
                for pair in silent[:8]
            )
            warnings.append(f"searxng: some of the instance's engines did not answer: {named}")
        return ProviderAnswer(
            hits=tuple(hits),
            time_filter=f"time_range={request.time_range}" if request.time_range else None,
            warnings=tuple(warnings),
        )
