"""Brave Search: ``GET /res/v1/web/search`` with an ``X-Subscription-Token`` header.

Request parameters used: ``q``, ``count`` (at most 20), ``freshness`` (``pd``, ``pw``,
``pm``, ``py`` for the past day, week, month, year) and ``result_filter=web``. Answer:
``web.results[]`` of ``title``, ``url``, ``description`` (with ``<strong>`` highlights),
``page_age`` (ISO timestamp, often the last modification) and ``age`` (prose, "2 days
ago"). Brave takes no domain filter parameter, so domain filters are enforced on its
results only. Errors: ``{"error": {"code", "detail", "status"}}`` — an invalid token is
422 ``SUBSCRIPTION_TOKEN_INVALID``, the rate limit 429 ``RATE_LIMITED``.
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

__all__ = ["Brave"]

MAX_RESULTS = 20
FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}


def _detail(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if not isinstance(error, dict):
        errors = data.get("errors")
        error = errors[0] if isinstance(errors, list) and errors else None
    if isinstance(error, dict):
        parts = [str(error[k]) for k in ("code", "detail") if isinstance(error.get(k), str)]
        return ": ".join(parts) or None
    return None


class Brave:
    """The Brave Search web API (paid, keyed)."""

    name = "brave"
    paid = True
    accepts_domains = False

    async def _key(self, env: SearchEnv) -> str:
        key = await env.secret("brave", env.settings.brave_api_key)
        if key is None:
            raise ProviderSkipped(
                "unconfigured",
                "no subscription token; set brave_api_key (CORRAL_BRAVE_API_KEY) or store a "
                "'brave' credential",
            )
        return key

    async def ready(self, env: SearchEnv) -> None:
        await self._key(env)

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        key = await self._key(env)
        params = {
            "q": request.query,
            "count": str(min(request.max_results, MAX_RESULTS)),
            "result_filter": "web",
        }
        if request.time_range is not None:
            params["freshness"] = FRESHNESS[request.time_range]
        data = await call_json(
            env,
            "Brave",
            f"{env.settings.brave_api_url}?{urlencode(params)}",
            headers={"X-Subscription-Token": key},
            detail=_detail,
        )
        if not isinstance(data, dict):
            raise ProviderFailed("Brave's answer is not a JSON object")
        web = data.get("web")
        # Brave leaves out the "web" section when nothing matched.
        results = web.get("results", []) if isinstance(web, dict) else []
        if not isinstance(results, list):
            raise ProviderFailed("Brave's answer has no 'web.results' list")
        hits: list[Hit] = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            published = parse_date(item.get("page_age"), now=env.clock())
            field = "page_age"
            if published is None:
                published, field = parse_date(item.get("age"), now=env.clock()), "age"
            hits.append(
                Hit(
                    title=text(item.get("title"), markup=True),
                    url=item["url"],
                    snippet=text(item.get("description"), markup=True),
                    provider=self.name,
                    position=len(hits) + 1,
                    published=published,
                    date_field=field if published is not None else None,
                    query=request.query,
                )
            )
        freshness = params.get("freshness")
        return ProviderAnswer(
            hits=tuple(hits), time_filter=f"freshness={freshness}" if freshness else None
        )
