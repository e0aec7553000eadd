"""Loopback servers that speak each search provider's real wire format.

Every provider is reached through the whole fetch pipeline: its host name (``api.tavily.test``,
``api.brave.test``…) resolves through a :class:`StaticResolver` to 127.0.0.2, which only the
explicit test allowance ``AddressRules.unsafe_allowing`` makes reachable. The answers use
the providers' documented fields (Tavily ``results[].published_date``, Brave
``web.results[].page_age`` / ``age``, SearXNG ``results[].publishedDate``, DuckDuckGo's HTML
``result__body`` blocks) and their documented error bodies.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from ipaddress import ip_network
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

import corral
from corral.platform import Platform
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules, StaticResolver
from tests.web.conftest import Handler, LoopbackServer, Seen

HOSTS = {
    "tavily": "api.tavily.test",
    "brave": "api.brave.test",
    "searxng": "searx.test",
    "duckduckgo": "html.duckduckgo.test",
    "pages": "www.public.test",
}
TAVILY_KEY = "tvly-test-0123456789abcdef"
BRAVE_KEY = "BSA-test-0123456789abcdef"


def query_of(seen: Seen) -> dict[str, str]:
    """The decoded query (GET) or form/JSON body (POST) a server received."""
    if seen.method == "GET":
        return {k: v[0] for k, v in parse_qs(urlsplit(seen.path).query).items()}
    if seen.headers.get("content-type", "").startswith("application/json"):
        return {k: v for k, v in json.loads(seen.body).items()}
    return {k: v[0] for k, v in parse_qs(seen.body.decode(), keep_blank_values=True).items()}


def json_reply(status: int, payload: Any) -> Callable[[Handler], None]:
    data = json.dumps(payload).encode()
    return lambda h: h.reply(status, data, content_type="application/json")


# -- answers in each provider's format ----------------------------------------------------


def tavily_answer(*results: dict[str, Any], query: str = "q") -> dict[str, Any]:
    return {
        "query": query,
        "answer": None,
        "images": [],
        "results": [
            {"title": "", "url": "", "content": "", "score": 0.9, "raw_content": None, **r}
            for r in results
        ],
        "response_time": 0.41,
        "request_id": "0f1c2d3e-test",
    }


def brave_answer(*results: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "search",
        "query": {"original": "q", "more_results_available": False},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
        "web": {
            "type": "search",
            "family_friendly": True,
            "results": [
                {
                    "type": "search_result",
                    "title": "",
                    "url": "",
                    "description": "",
                    "language": "en",
                    "family_friendly": True,
                    "meta_url": {"scheme": "https", "hostname": urlsplit(r["url"]).hostname},
                    **r,
                }
                for r in results
            ],
        },
    }


def searxng_answer(*results: dict[str, Any], unresponsive: list[list[str]] | None = None) -> Any:
    return {
        "query": "q",
        "number_of_results": 0,
        "results": [
            {
                "url": "",
                "title": "",
                "content": "",
                "engine": "duckduckgo",
                "engines": ["duckduckgo"],
                "positions": [1],
                "score": 1.0,
                "category": "general",
                "publishedDate": None,
                "template": "default.html",
                "parsed_url": ["https", urlsplit(r["url"]).hostname, "/", "", "", ""],
                **r,
            }
            for r in results
        ],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": unresponsive or [],
    }


def ddg_page(*results: dict[str, str], ad: bool = True) -> str:
    """A DuckDuckGo HTML results page: an ad block, then organic ``result__body`` blocks."""
    blocks = []
    if ad:
        blocks.append(
            '<div class="result results_links results_links_deep result--ad">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            '<a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.test">'
            'Sponsored</a></h2><a class="result__snippet" href="#">Buy now</a></div></div>'
        )
    for r in results:
        href = "//duckduckgo.com/l/?uddg=" + quote(r["url"], safe="") + "&amp;rut=abc"
        stamp = (
            f'<span class="result__timestamp">{r["timestamp"]}</span>' if "timestamp" in r else ""
        )
        blocks.append(
            '<div class="result results_links results_links_deep web-result ">'
            '<div class="links_main links_deep result__body">'
            f'<h2 class="result__title"><a rel="nofollow" class="result__a" href="{href}">'
            f"{r['title']}</a></h2>"
            '<div class="result__extras"><div class="result__extras__url">'
            f'<a class="result__url" href="{href}">{urlsplit(r["url"]).hostname}</a>{stamp}'
            "</div></div>"
            f'<a class="result__snippet" href="{href}">{r.get("snippet", "")}</a>'
            "</div></div>"
        )
    return (
        "<!DOCTYPE html><html><head><title>q at DuckDuckGo</title></head><body>"
        '<div id="links" class="results">' + "".join(blocks) + "</div></body></html>"
    )


# -- the sites and the platform -----------------------------------------------------------


@dataclass
class Sites:
    tavily: LoopbackServer
    brave: LoopbackServer
    searxng: LoopbackServer
    duckduckgo: LoopbackServer
    pages: LoopbackServer

    @property
    def all(self) -> list[LoopbackServer]:
        return [self.tavily, self.brave, self.searxng, self.duckduckgo, self.pages]

    def url(self, name: str, path: str) -> str:
        server: LoopbackServer = getattr(self, name)
        return server.url(path, host=HOSTS[name])


@pytest.fixture
def sites(make_server: Callable[..., LoopbackServer]) -> Iterator[Sites]:
    """One server per provider on 127.0.0.2, each answering an empty result list."""
    found = Sites(*(make_server("127.0.0.2") for _ in range(5)))
    found.tavily.routes["/search"] = json_reply(200, tavily_answer())
    found.brave.routes["/res/v1/web/search"] = json_reply(200, brave_answer())
    found.searxng.routes["/search"] = json_reply(200, searxng_answer())
    found.duckduckgo.page("/html/", ddg_page(ad=False))
    yield found


OpenSearch = Callable[..., Awaitable[Platform]]


@pytest.fixture
async def open_search(data_dir: Path, sites: Sites) -> AsyncIterator[OpenSearch]:
    """Open a platform whose search providers are the loopback ``sites``.

    ``open_search(tavily=True, brave=False, searxng=True, **live)``: which providers have a
    key or instance URL configured, and live settings to set.
    """
    async with AsyncExitStack() as stack:

        async def open_(
            *, tavily: bool = True, brave: bool = True, searxng: bool = True, **live: Any
        ) -> Platform:
            settings: dict[str, Any] = {
                "tavily_api_url": sites.url("tavily", "/search"),
                "brave_api_url": sites.url("brave", "/res/v1/web/search"),
                "keyless_search_url": sites.url("duckduckgo", "/html/"),
            }
            if tavily:
                settings["tavily_api_key"] = TAVILY_KEY
            if brave:
                settings["brave_api_key"] = BRAVE_KEY
            if searxng:
                settings["searxng_url"] = sites.url("searxng", "/")
            platform = await stack.enter_async_context(corral.open(data_dir, **settings))
            platform.provide(
                web=WebAccess(
                    resolver=StaticResolver({host: ["127.0.0.2"] for host in HOSTS.values()}),
                    addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.2/32")),
                )
            )
            ports = ",".join(str(server.port) for server in sites.all)
            await platform.admin.set_live("web_allowed_ports", ports)
            for key, value in live.items():
                await platform.admin.set_live(key, value)
            return platform

        yield open_
