"""web_fetch as a tool: through the whole pipeline, against real loopback servers.

The "public" site is a server on 127.0.0.2 reached as www.public.test through an explicit
test allowance; 127.0.0.1 stays non-public, so redirects there must be refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from ipaddress import ip_network
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules, StaticResolver
from tests.web.conftest import LoopbackServer
from tests.web.test_extraction_pdf import make_pdf

ARTICLE = (
    "<html><head><title>Field notes</title></head><body><nav>Home | About</nav>"
    "<article><h1>Field notes</h1>"
    + "".join(
        f"<p>Paragraph {i} of the field notes tells how the herd moved across the valley "
        f"and why the fences mattered that season.</p>"
        for i in range(12)
    )
    + "</article><footer>© site</footer></body></html>"
)


@pytest.fixture
async def web(
    data_dir: Path, other_server: LoopbackServer
) -> AsyncIterator[tuple[Platform, LoopbackServer]]:
    async with corral.open(data_dir) as platform:
        platform.provide(
            web=WebAccess(
                resolver=StaticResolver({"www.public.test": ["127.0.0.2"]}),
                addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.2/32")),
            )
        )
        await platform.admin.set_live("web_allowed_ports", str(other_server.port))
        yield platform, other_server


def url(site: LoopbackServer, path: str) -> str:
    return site.url(path, host="www.public.test")


async def test_html_article_with_header(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    site.page("/article", ARTICLE)
    result = await platform.call_tool("web_fetch", {"url": url(site, "/article")})
    assert not result.is_error, result.text
    header, body = result.text.split("\n\n", 1)
    assert f"url: {url(site, '/article')}" in header
    assert "status: 200" in header and "content type: text/html" in header
    assert "extractor: trafilatura" in header
    assert "original length:" in header and "returned length:" in header
    assert "Paragraph 11 of the field notes" in body and "Home | About" not in body
    assert result.data is not None and result.data["kind"] == "html"


@pytest.mark.parametrize(
    ("body", "content_type", "fmt", "expect_header", "expect_body"),
    [
        (
            "# Title\n\nSome *markdown* text.",
            "text/markdown",
            "markdown",
            "extractor: markdown-passthrough",
            "Some *markdown* text.",
        ),
        ('{"b": 1, "a": [1, 2]}', "application/json", "markdown", "content kind: json", '"a": ['),
        ('{"ok": true}', "text/plain", "json", "note:", '"ok": true'),
        (
            "<?xml version='1.0'?><rss version='2.0'><channel><title>Feed</title><item>"
            "<title>First item</title><link>https://x.test/1</link></item></channel></rss>",
            "application/rss+xml",
            "markdown",
            "content kind: xml",
            "First item",
        ),
        ("plain words here", "text/plain", "text", "content kind: text", "plain words here"),
        (
            "<html><body><p>raw <b>markup</b></p></body></html>",
            "text/html",
            "raw",
            "extractor: raw",
            "<b>markup</b>",
        ),
    ],
)
async def test_content_kinds_and_formats(
    web: tuple[Platform, LoopbackServer],
    body: str,
    content_type: str,
    fmt: str,
    expect_header: str,
    expect_body: str,
) -> None:
    platform, site = web
    site.page("/doc", body, content_type=content_type)
    result = await platform.call_tool("web_fetch", {"url": url(site, "/doc"), "format": fmt})
    assert not result.is_error, result.text
    header, text = result.text.split("\n\n", 1)
    assert expect_header in header
    assert expect_body in text


async def test_json_format_on_a_non_json_body_is_an_error(
    web: tuple[Platform, LoopbackServer],
) -> None:
    platform, site = web
    site.page("/page", ARTICLE)
    result = await platform.call_tool("web_fetch", {"url": url(site, "/page"), "format": "json"})
    assert result.error_code == "unsupported_content"


async def test_max_chars_cut_is_reported(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    site.page("/long", "x" * 5000, content_type="text/plain")
    result = await platform.call_tool("web_fetch", {"url": url(site, "/long"), "max_chars": 1000})
    header, text = result.text.split("\n\n", 1)
    assert len(text) == 1000
    assert "cut: yes" in header and "first 1,000 of 5,000 characters" in header


async def test_redirect_is_followed_and_reported(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    site.page("/new", ARTICLE)
    site.redirect("/old", url(site, "/new"))
    result = await platform.call_tool("web_fetch", {"url": url(site, "/old")})
    assert f"url: {url(site, '/new')}" in result.text and "redirects: 1" in result.text


async def test_redirect_to_a_private_address_is_refused(
    web: tuple[Platform, LoopbackServer], server: LoopbackServer
) -> None:
    platform, site = web
    server.page("/secret", "TOP-SECRET", content_type="text/plain")
    site.redirect("/hop", server.url("/secret"))
    await platform.admin.set_live("web_allowed_ports", f"{site.port},{server.port}")
    result = await platform.call_tool("web_fetch", {"url": url(site, "/hop")})
    assert result.error_code == "blocked_address"
    assert "TOP-SECRET" not in result.text
    assert server.requests == []


async def test_slow_drip_hits_the_timeout(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    site.drip("/drip", interval=0.2)
    result = await platform.call_tool("web_fetch", {"url": url(site, "/drip"), "timeout_ms": 1000})
    assert result.error_code == "timeout"


async def test_oversized_body_names_the_setting(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    await platform.admin.set_live("web_fetch_text_max_bytes", 4096)
    site.stream("/big", 100_000, content_length=False)
    result = await platform.call_tool("web_fetch", {"url": url(site, "/big")})
    assert result.error_code == "too_large" and "web_fetch_text_max_bytes" in result.text


async def test_pdf_under_and_over_its_own_ceiling(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    pdf = make_pdf("First page about fences.", "Second page about herds.")
    site.page("/doc.pdf", pdf, content_type="application/pdf")
    ok = await platform.call_tool("web_fetch", {"url": url(site, "/doc.pdf")})
    assert not ok.is_error, ok.text
    assert "Second page about herds." in ok.text and "content kind: pdf" in ok.text
    await platform.admin.set_live("web_fetch_pdf_max_bytes", 1024)
    await platform.admin.set_live("web_fetch_text_max_bytes", 10 * 1024 * 1024)
    site.page("/big.pdf", pdf + b"%" + b"0" * 4096, content_type="application/pdf")
    over = await platform.call_tool("web_fetch", {"url": url(site, "/big.pdf")})
    assert over.error_code == "too_large" and "web_fetch_pdf_max_bytes" in over.text


async def test_js_only_page_is_reported(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    site.page(
        "/app",
        "<html><head><title>App</title></head><body><div id='root'></div>"
        "<noscript>You need to enable JavaScript to run this app.</noscript>"
        "<script src='/bundle.js'></script></body></html>",
    )
    result = await platform.call_tool("web_fetch", {"url": url(site, "/app")})
    assert "needs JavaScript: yes" in result.text
    assert result.data is not None and result.data["js_only"] is True


async def test_http_error_status(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    result = await platform.call_tool("web_fetch", {"url": url(site, "/missing")})
    assert result.error_code == "http_error" and "404" in result.text


async def test_save_to_with_drive_write(
    web: tuple[Platform, LoopbackServer], data_dir: Path
) -> None:
    platform, site = web
    site.page("/article", ARTICLE)
    result = await platform.call_tool(
        "web_fetch", {"url": url(site, "/article"), "save_to": "data://notes/field.md"}
    )
    assert "saved to: data://notes/field.md" in result.text
    assert "Paragraph 3" in (data_dir / "drive" / "notes" / "field.md").read_text()
    tmp = await platform.call_tool("web_fetch", {"url": url(site, "/article"), "save_to": "tmp"})
    saved = tmp.data["saved_to"]  # type: ignore[index]
    assert saved.startswith("data://tmp/web_fetch/")
    assert (data_dir / "drive" / saved.removeprefix("data://")).is_file()


async def test_save_to_without_drive_write_still_fetches(
    web: tuple[Platform, LoopbackServer], data_dir: Path
) -> None:
    platform, site = web
    site.page("/article", ARTICLE)
    await platform.identity.create_role("reader", ["core.web"])
    await platform.identity.create_user("rex", "reader")
    result = await platform.call_tool(
        "web_fetch", {"url": url(site, "/article"), "save_to": "data://r.md"}, user="rex"
    )
    assert not result.is_error
    assert "Paragraph 3" in result.text
    assert "fetched but not stored" in result.text
    assert not (data_dir / "drive" / "r.md").exists()


async def test_save_to_outside_the_drive_is_refused_before_fetching(
    web: tuple[Platform, LoopbackServer],
) -> None:
    platform, site = web
    site.page("/article", ARTICLE)
    result = await platform.call_tool(
        "web_fetch", {"url": url(site, "/article"), "save_to": "/etc/x.md"}
    )
    assert result.error_code == "invalid_arguments"
    assert site.requests == []


async def test_default_access_refuses_loopback(data_dir: Path, server: LoopbackServer) -> None:
    server.page("/secret", "TOP-SECRET", content_type="text/plain")
    async with corral.open(data_dir) as platform:
        await platform.admin.set_live("web_allowed_ports", str(server.port))
        result = await platform.call_tool("web_fetch", {"url": server.url("/secret")})
    assert result.error_code == "blocked_address"
    assert server.requests == []


async def test_web_fetch_needs_core_web(web: tuple[Platform, LoopbackServer]) -> None:
    platform, site = web
    await platform.identity.create_role("offline", ["core.exec"])
    await platform.identity.create_user("olga", "offline")
    result = await platform.call_tool("web_fetch", {"url": url(site, "/")}, user="olga")
    assert result.error_code == "feature_missing"


async def test_save_to_over_a_setuid_file_clears_setuid_and_setgid(
    web: tuple[Platform, LoopbackServer], data_dir: Path
) -> None:
    platform, site = web
    site.page("/article", ARTICLE)
    target = data_dir / "drive" / "notes" / "tool"
    target.parent.mkdir(parents=True)
    target.write_text("#!/bin/sh\n")
    os.chmod(target, 0o6755)
    result = await platform.call_tool(
        "web_fetch", {"url": url(site, "/article"), "save_to": "data://notes/tool"}
    )
    assert "saved to: data://notes/tool" in result.text, result.text
    assert "Paragraph 3" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
