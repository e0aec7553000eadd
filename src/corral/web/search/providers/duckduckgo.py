"""The keyless engine: DuckDuckGo's HTML endpoint, fetched through the hardened pipeline.

The ``ddgs`` package would do this job, but it sends its requests through its own HTTP
client (``primp``), which knows nothing of our address rules, pinned resolution or
redirect checks — so no search request may go through it. Instead we ``POST`` the same
form ``ddgs`` sends (``q``, ``b``, ``kl``, and ``df`` = ``d``/``w``/``m``/``y`` for the
time window) to ``html.duckduckgo.com/html/`` through :class:`~corral.web.fetch.Fetcher`
and read the page: ``div.result__body`` blocks with ``a.result__a`` (title and link,
sometimes wrapped as ``//duckduckgo.com/l/?uddg=…``), ``.result__snippet`` and, on some
results, ``.result__timestamp``. Ads (``result--ad``, ``y.js`` links) are dropped. A bot
challenge (HTTP 202 or the anomaly form) is a failure, never an empty answer.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ..dates import parse_date
from ..env import SearchEnv
from ..hits import Hit
from ..provider import ProviderAnswer, ProviderFailed
from ..request import SearchRequest
from ._api import TEXT_ONLY, status_meaning, text

__all__ = ["DuckDuckGo", "parse_results_page"]

TIME_LIMIT = {"day": "d", "week": "w", "month": "m", "year": "y"}
_CHALLENGE_MARKERS = (b"anomaly-modal", b"challenge-form", b"anomaly.js")


def _has_class(element: Any, name: str) -> bool:
    return name in (element.get("class") or "").split()


def _real_link(href: str) -> str | None:
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.hostname and parts.hostname.endswith("duckduckgo.com"):
        if parts.path == "/y.js":
            return None
        target = parse_qs(parts.query).get("uddg")
        return target[0] if target else None
    return href if parts.scheme in ("http", "https") else None


def parse_results_page(html: str, *, query: str, now: Any = None) -> list[Hit]:
    """The organic results of a DuckDuckGo HTML results page, in page order."""
    if not html.strip():
        return []
    import lxml.html  # type: ignore[import-untyped,unused-ignore]  # not at start-up

    root = lxml.html.document_fromstring(html)
    hits: list[Hit] = []
    for body in root.xpath("//div[contains(@class, 'result__body')]"):
        block = body.getparent()
        if any(_has_class(node, "result--ad") for node in (body, block) if node is not None):
            continue
        anchors = body.xpath(".//a[contains(@class, 'result__a')]")
        if not anchors:
            continue
        link = _real_link(anchors[0].get("href") or "")
        if link is None:
            continue
        snippets = body.xpath(".//*[contains(@class, 'result__snippet')]")
        stamps = body.xpath(".//*[contains(@class, 'result__timestamp')]")
        published = parse_date(stamps[0].text_content(), now=now) if stamps else None
        hits.append(
            Hit(
                title=text(anchors[0].text_content()),
                url=link,
                snippet=text(snippets[0].text_content()) if snippets else "",
                provider="duckduckgo",
                position=len(hits) + 1,
                published=published,
                date_field="timestamp" if published is not None else None,
                query=query,
            )
        )
    return hits


class DuckDuckGo:
    """DuckDuckGo's HTML results, the keyless fallback (free, needs nothing configured)."""

    name = "duckduckgo"
    paid = False
    accepts_domains = False

    async def ready(self, env: SearchEnv) -> None:
        return None

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        form = {"q": request.query, "b": "", "kl": "wt-wt"}
        if request.time_range is not None:
            form["df"] = TIME_LIMIT[request.time_range]
        response = await env.fetcher.fetch(
            env.settings.keyless_search_url,
            method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            content=urlencode(form).encode(),
            accept=TEXT_ONLY,
            timeout_ms=env.config.timeout_ms,
            follow_redirects=False,
        )
        if response.status == 202 or any(m in response.body for m in _CHALLENGE_MARKERS):
            raise ProviderFailed(
                "DuckDuckGo answered with a bot challenge instead of results (it rate-limits "
                "automated clients); retry later or configure a search provider",
                status=response.status,
            )
        if not response.ok:
            raise ProviderFailed(
                f"DuckDuckGo answered HTTP {response.status} {response.reason}: "
                f"{status_meaning(response.status)}",
                status=response.status,
            )
        page = response.body.decode(response.charset or "utf-8", "replace")
        hits = parse_results_page(page, query=request.query, now=env.clock())
        return ProviderAnswer(
            hits=tuple(hits[: request.max_results]),
            time_filter=f"df={form['df']}" if "df" in form else None,
        )
