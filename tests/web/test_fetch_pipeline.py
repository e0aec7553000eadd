"""The fetch pipeline against real loopback servers, reached through the test allowance."""

from __future__ import annotations

import gzip
import json
import time
from ipaddress import ip_address, ip_network
from typing import Any

import anyio
import pytest

from corral.web.fetch import (
    AddressRules,
    Fetcher,
    FetchError,
    FetchPolicy,
    StaticResolver,
)

pytestmark = pytest.mark.filterwarnings("error")


async def refused(fetcher: Fetcher, url: str, **kwargs: Any) -> FetchError:
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(url, **kwargs)
    return caught.value


# -- plain fetches -------------------------------------------------------------------------


async def test_plain_fetch_returns_body_status_and_headers(server: Any, allowing: Any) -> None:
    server.page("/hello", "<p>hi</p>", headers={"X-Test": "yes"})
    page = await allowing(server).fetch(server.url("/hello?q=1#frag"))
    assert page.status == 200 and page.ok
    assert page.body == b"<p>hi</p>"
    assert page.url == server.url("/hello?q=1")
    assert page.media_type == "text/html" and page.charset == "utf-8" and page.kind == "text"
    assert page.headers["x-test"] == "yes"
    assert page.address == "127.0.0.1"
    assert page.redirects == ()
    assert page.elapsed_ms > 0
    assert server.paths == ["/hello?q=1"]
    sent = server.requests[0].headers
    assert sent["accept-encoding"] == "gzip, deflate"
    assert "Corral" in sent["user-agent"]


async def test_default_fetcher_refuses_the_loopback_server(server: Any) -> None:
    server.page("/", "secret")
    fetcher = Fetcher(FetchPolicy(allowed_ports=frozenset({server.port})))
    error = await refused(fetcher, server.url("/"))
    assert error.code == "blocked_address"
    assert "loopback" in error.message
    assert server.connections == 0


async def test_request_goes_to_the_pinned_address_with_the_original_host(
    twins: Any, allowing: Any
) -> None:
    public, secret = twins
    public.page("/who", "public page")
    resolver = StaticResolver({"www.public.test": ["127.0.0.2"]})
    fetcher = allowing(public, resolver=resolver)
    page = await fetcher.fetch(public.url("/who", host="www.public.test"))
    assert page.body == b"public page"
    assert page.address == "127.0.0.2"
    [seen] = public.requests
    assert seen.headers["host"] == f"www.public.test:{public.port}"
    assert seen.local_address == "127.0.0.2"
    assert resolver.calls == [("www.public.test", public.port)]
    assert secret.connections == 0


async def test_https_uses_the_original_name_for_sni_and_certificate(
    make_server: Any, allowing: Any, cert_authority: Any, tmp_path: Any
) -> None:
    tls = cert_authority.server_context("secure.public.test", tmp_dir=tmp_path)
    srv = make_server("127.0.0.2", tls=tls)
    srv.page("/", "over tls")
    resolver = StaticResolver({"secure.public.test": ["127.0.0.2"]})
    fetcher = allowing(srv, resolver=resolver, ssl_context=cert_authority.client_context())
    page = await fetcher.fetch(srv.url("/", host="secure.public.test"))
    assert page.body == b"over tls"
    assert srv.sni_names == ["secure.public.test"]
    assert srv.requests[0].headers["host"] == f"secure.public.test:{srv.port}"


async def test_https_certificate_for_another_name_is_refused(
    make_server: Any, allowing: Any, cert_authority: Any, tmp_path: Any
) -> None:
    tls = cert_authority.server_context("other.public.test", tmp_dir=tmp_path)
    srv = make_server("127.0.0.2", tls=tls)
    srv.page("/", "should not be read")
    resolver = StaticResolver({"secure.public.test": ["127.0.0.2"]})
    fetcher = allowing(srv, resolver=resolver, ssl_context=cert_authority.client_context())
    error = await refused(fetcher, srv.url("/", host="secure.public.test"))
    assert error.code == "network_error"
    assert "TLS" in error.message and "secure.public.test" in error.message
    assert srv.requests == []


async def test_post_with_json_and_bearer_header(server: Any, allowing: Any) -> None:
    server.echo("/search")
    page = await allowing(server).fetch(
        server.url("/search"),
        method="POST",
        json={"query": "corral", "max": 3},
        headers={"Authorization": "Bearer sk-test", "X-Subscription-Token": "tok"},
        raise_for_status=True,
    )
    echoed = json.loads(page.body)
    assert echoed["method"] == "POST"
    assert json.loads(echoed["body"]) == {"query": "corral", "max": 3}
    assert echoed["headers"]["content-type"] == "application/json"
    assert echoed["headers"]["authorization"] == "Bearer sk-test"
    assert echoed["headers"]["x-subscription-token"] == "tok"


async def test_post_with_raw_content(server: Any, allowing: Any) -> None:
    server.echo("/form")
    page = await allowing(server).fetch(
        server.url("/form"),
        method="POST",
        content=b"a=1&b=2",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert json.loads(page.body)["body"] == "a=1&b=2"


async def test_head_reads_no_body(server: Any, allowing: Any) -> None:
    server.page("/", "x" * 100)
    page = await allowing(server).fetch(server.url("/"), method="HEAD")
    assert page.status == 200 and page.body == b""


async def test_pipeline_owned_headers_cannot_be_set(server: Any, allowing: Any) -> None:
    from corral.errors import UsageError

    for name in ("Host", "Content-Length", "Transfer-Encoding", "Accept-Encoding"):
        with pytest.raises(UsageError):
            await allowing(server).fetch(server.url("/"), headers={name: "x"})
    with pytest.raises(UsageError):
        await allowing(server).fetch(server.url("/"), headers={"X-A": "a\r\nHost: evil"})
    assert server.connections == 0


# -- non-2xx answers -----------------------------------------------------------------------


async def test_non_2xx_is_returned_by_default(server: Any, allowing: Any) -> None:
    server.page("/gone", "<p>gone</p>", status=404)
    page = await allowing(server).fetch(server.url("/gone"))
    assert page.status == 404 and not page.ok
    assert page.body == b"<p>gone</p>"
    with pytest.raises(FetchError) as caught:
        page.raise_for_status()
    assert caught.value.code == "http_error"


async def test_non_2xx_raises_http_error_when_asked(server: Any, allowing: Any) -> None:
    server.page("/busy", "slow down", status=429)
    error = await refused(allowing(server), server.url("/busy"), raise_for_status=True)
    assert error.code == "http_error"
    assert error.data["status"] == 429
    assert "429" in error.message and "rate" in error.message


# -- redirects -----------------------------------------------------------------------------


async def test_relative_and_absolute_redirects_are_followed(server: Any, allowing: Any) -> None:
    server.redirect("/a", "b", 301)
    server.redirect("/b", "/c?x=1", 302)
    server.redirect("/c", server.url("/d"), 308)
    server.page("/d", "arrived")
    page = await allowing(server).fetch(server.url("/a"))
    assert page.body == b"arrived"
    assert page.url == server.url("/d")
    assert [(hop.status, hop.url) for hop in page.redirects] == [
        (301, server.url("/a")),
        (302, server.url("/b")),
        (308, server.url("/c?x=1")),
    ]
    assert server.paths == ["/a", "/b", "/c?x=1", "/d"]


@pytest.mark.parametrize(
    ("status", "method", "body"),
    [
        (301, "GET", ""),
        (302, "GET", ""),
        (303, "GET", ""),
        (307, "POST", "{}"),
        (308, "POST", "{}"),
    ],
)
async def test_redirect_rewrites_method_and_body(
    server: Any, allowing: Any, status: int, method: str, body: str
) -> None:
    server.redirect("/start", "/echo", status)
    server.echo("/echo")
    page = await allowing(server).fetch(server.url("/start"), method="POST", json={})
    echoed = json.loads(page.body)
    assert echoed["method"] == method
    assert echoed["body"] == body
    assert ("content-type" in echoed["headers"]) == bool(body)


async def test_cross_origin_redirect_drops_credentials(
    server: Any, other_server: Any, allowing: Any
) -> None:
    server.redirect("/start", other_server.url("/echo"))
    other_server.echo("/echo")
    page = await allowing(server, other_server).fetch(
        server.url("/start"),
        headers={"Authorization": "Bearer sk", "X-Api-Key": "k", "Accept-Language": "fr"},
    )
    seen = json.loads(page.body)["headers"]
    assert "authorization" not in seen and "x-api-key" not in seen
    assert seen["accept-language"] == "fr"
    assert server.requests[0].headers["authorization"] == "Bearer sk"


async def test_same_origin_redirect_keeps_credentials(server: Any, allowing: Any) -> None:
    server.redirect("/start", "/echo")
    server.echo("/echo")
    page = await allowing(server).fetch(server.url("/start"), headers={"Authorization": "B x"})
    assert json.loads(page.body)["headers"]["authorization"] == "B x"


async def test_body_is_not_replayed_to_another_origin(
    server: Any, other_server: Any, allowing: Any
) -> None:
    server.redirect("/api", other_server.url("/steal"), 307)
    other_server.echo("/steal")
    page = await allowing(server, other_server).fetch(
        server.url("/api"), method="POST", json={"api_key": "secret"}
    )
    assert page.status == 307
    assert other_server.connections == 0


async def test_follow_redirects_off_returns_the_redirect(server: Any, allowing: Any) -> None:
    server.redirect("/a", "/b")
    server.page("/b", "b")
    page = await allowing(server).fetch(server.url("/a"), follow_redirects=False)
    assert page.status == 302 and page.headers["location"] == "/b"
    assert server.paths == ["/a"]


async def test_hop_limit(server: Any, allowing: Any) -> None:
    for index in range(10):
        server.redirect(f"/r{index}", f"/r{index + 1}")
    fetcher = allowing(server, max_redirects=3)
    error = await refused(fetcher, server.url("/r0"))
    assert error.code == "too_many_redirects"
    assert "3" in error.message and "max_redirects" in error.message
    assert server.paths == ["/r0", "/r1", "/r2", "/r3"]


async def test_redirect_loop_hits_the_limit(server: Any, allowing: Any) -> None:
    server.redirect("/loop", "/loop")
    error = await refused(allowing(server), server.url("/loop"))
    assert error.code == "too_many_redirects"
    assert len(server.requests) == 6


async def test_redirect_to_loopback_is_refused_when_only_the_first_host_is_allowed(
    twins: Any, allowing: Any
) -> None:
    public, secret = twins
    public.redirect("/go", secret.url("/secret"))
    fetcher = allowing(public)  # exempts 127.0.0.2 only; 127.0.0.1 stays non-public
    error = await refused(fetcher, public.url("/go"))
    assert error.code == "blocked_address"
    assert error.data["redirected_from"] == public.url("/go")
    assert "loopback" in error.message
    assert secret.connections == 0


@pytest.mark.parametrize(
    "location",
    [
        "http://localhost:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://10.0.0.1:{port}/",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:{port}/_GET",
        "http://user:pw@127.0.0.2:{port}/",
        "http://127.0.0.2:22/",
    ],
)
async def test_every_redirect_hop_is_revalidated(twins: Any, allowing: Any, location: str) -> None:
    public, secret = twins
    public.redirect("/go", location.format(port=public.port))
    error = await refused(allowing(public), public.url("/go"))
    assert error.code in {
        "blocked_address",
        "blocked_host",
        "blocked_scheme",
        "blocked_port",
        "bad_url",
    }
    assert "redirect" in error.message
    assert secret.connections == 0
    assert public.paths == ["/go"]


async def test_redirect_resolves_the_new_host_again(twins: Any, allowing: Any) -> None:
    public, _ = twins
    public.redirect("/go", public.url("/there", host="b.public.test"))
    public.page("/there", "b")
    resolver = StaticResolver({"a.public.test": ["127.0.0.2"], "b.public.test": ["127.0.0.2"]})
    page = await allowing(public, resolver=resolver).fetch(public.url("/go", host="a.public.test"))
    assert page.body == b"b"
    assert [name for name, _ in resolver.calls] == ["a.public.test", "b.public.test"]


# -- allow_hosts and the deny-list ---------------------------------------------------------


async def test_allow_hosts_limits_the_first_hop(twins: Any, allowing: Any) -> None:
    public, _ = twins
    public.page("/", "x")
    resolver = StaticResolver({"a.public.test": ["127.0.0.2"], "b.public.test": ["127.0.0.2"]})
    fetcher = allowing(public, resolver=resolver)
    page = await fetcher.fetch(public.url("/", host="a.public.test"), allow_hosts=["a.public.test"])
    assert page.ok
    error = await refused(
        fetcher, public.url("/", host="b.public.test"), allow_hosts=["a.public.test"]
    )
    assert error.code == "blocked_host"
    assert "allow_hosts" in error.message
    assert resolver.calls == [("a.public.test", public.port)]


async def test_allow_hosts_wildcards(twins: Any, allowing: Any) -> None:
    public, _ = twins
    public.page("/", "x")
    resolver = StaticResolver({"www.public.test": ["127.0.0.2"], "public.test": ["127.0.0.2"]})
    fetcher = allowing(public, resolver=resolver)
    page = await fetcher.fetch(
        public.url("/", host="www.public.test"), allow_hosts=["*.public.test"]
    )
    assert page.ok
    error = await refused(
        fetcher, public.url("/", host="public.test"), allow_hosts=["*.public.test"]
    )
    assert error.code == "blocked_host"


async def test_allow_hosts_applies_to_redirects(twins: Any, allowing: Any) -> None:
    public, _ = twins
    public.redirect("/go", public.url("/x", host="elsewhere.test"))
    public.page("/x", "x")
    resolver = StaticResolver({"a.public.test": ["127.0.0.2"], "elsewhere.test": ["127.0.0.2"]})
    fetcher = allowing(public, resolver=resolver)
    error = await refused(
        fetcher, public.url("/go", host="a.public.test"), allow_hosts=["a.public.test"]
    )
    assert error.code == "blocked_host"
    assert error.data["redirected_from"].startswith("http://a.public.test")
    assert public.paths == ["/go"]


async def test_bad_allow_hosts_entry(server: Any, allowing: Any) -> None:
    error = await refused(
        allowing(server), server.url("/"), allow_hosts=["https://example.com/path"]
    )
    assert error.code == "bad_url" and "allow_hosts" in error.message


async def test_deny_list_on_first_hop_and_redirects(twins: Any, allowing: Any) -> None:
    public, _ = twins
    public.redirect("/go", public.url("/x", host="cdn.blocked.test"))
    public.page("/x", "x")
    resolver = StaticResolver(
        {"ok.public.test": ["127.0.0.2"], "cdn.blocked.test": ["127.0.0.2"], "blocked.test": []}
    )
    fetcher = allowing(public, resolver=resolver, deny_hosts=("blocked.test",))
    error = await refused(fetcher, public.url("/", host="blocked.test"))
    assert error.code == "blocked_host" and "deny-list" in error.message
    error = await refused(fetcher, public.url("/go", host="ok.public.test"))
    assert error.code == "blocked_host" and "deny-list" in error.message
    assert public.paths == ["/go"]


async def test_denied_networks_apply_to_resolved_addresses(twins: Any, allowing: Any) -> None:
    public, _ = twins
    resolver = StaticResolver({"www.public.test": ["127.0.0.2"]})
    fetcher = allowing(public, resolver=resolver, deny_networks=(ip_network("127.0.0.0/30"),))
    error = await refused(fetcher, public.url("/", host="www.public.test"))
    assert error.code == "blocked_address" and "denied network" in error.message
    assert public.connections == 0


# -- URL-level refusals --------------------------------------------------------------------


async def test_userinfo_is_refused(server: Any, allowing: Any) -> None:
    server.page("/", "x")
    for url in (
        f"http://user:pass@{server.authority}/",
        f"http://user@{server.authority}/",
        f"http://:@{server.authority}/",
    ):
        error = await refused(allowing(server), url)
        assert error.code == "bad_url" and "credentials" in error.message
    assert server.connections == 0


async def test_ports_outside_the_policy_are_refused(server: Any) -> None:
    server.page("/", "x")
    fetcher = Fetcher(
        FetchPolicy(),
        addresses=AddressRules.unsafe_allowing(
            *[__import__("ipaddress").ip_network("127.0.0.1/32")]
        ),
    )
    error = await refused(fetcher, server.url("/"))
    assert error.code == "blocked_port"
    assert str(server.port) in error.message and "80, 443, 8080, 8443" in error.message
    assert server.connections == 0


# -- timeouts ------------------------------------------------------------------------------


async def test_slow_drip_hits_the_overall_deadline(server: Any, allowing: Any) -> None:
    server.drip("/drip", interval=0.05)
    started = time.monotonic()
    with anyio.fail_after(10):  # a per-read timeout would never fire: fail, do not hang
        error = await refused(allowing(server), server.url("/drip"), timeout_ms=400)
    elapsed = time.monotonic() - started
    assert error.code == "timeout"
    assert "400 ms" in error.message and "reading the body" in error.message
    assert 0.35 < elapsed < 2.0


async def test_timeout_covers_dns(server: Any, allowing: Any) -> None:
    class HangingResolver:
        async def resolve(self, host: str, port: int) -> list[Any]:
            await anyio.sleep_forever()
            raise AssertionError

    started = time.monotonic()
    error = await refused(
        allowing(server, resolver=HangingResolver()),
        server.url("/", host="slow.public.test"),
        timeout_ms=200,
    )
    assert error.code == "timeout" and "resolving" in error.message
    assert time.monotonic() - started < 2.0


async def test_timeout_covers_redirect_hops(server: Any, allowing: Any) -> None:
    server.redirect("/a", "/drip")
    server.drip("/drip", interval=0.05)
    error = await refused(allowing(server), server.url("/a"), timeout_ms=300)
    assert error.code == "timeout" and "after 1 redirect" in error.message


async def test_timeout_is_clamped_to_the_policy_maximum(server: Any, allowing: Any) -> None:
    server.drip("/drip", interval=0.05)
    fetcher = allowing(server, max_timeout_ms=300, default_timeout_ms=300)
    error = await refused(fetcher, server.url("/drip"), timeout_ms=60_000)
    assert error.code == "timeout" and "300 ms" in error.message


# -- body ceilings -------------------------------------------------------------------------


async def test_oversized_body_with_content_length_is_refused_early(
    server: Any, allowing: Any
) -> None:
    server.stream("/big", 50_000)
    error = await refused(allowing(server, text_max_bytes=10_000), server.url("/big"))
    assert error.code == "too_large"
    assert error.data["limit"] == 10_000 and error.data["setting"] == "text_max_bytes"
    assert "declares" in error.message and "text_max_bytes" in error.message


async def test_oversized_body_without_content_length_is_cut_while_streaming(
    server: Any, allowing: Any
) -> None:
    server.stream("/big", 5_000_000, content_length=False, chunk=8192)
    error = await refused(allowing(server, text_max_bytes=10_000), server.url("/big"))
    assert error.code == "too_large"
    assert "while reading" in error.message
    assert error.data["size"] <= 10_000 + 64 * 1024


async def test_body_at_the_ceiling_is_accepted(server: Any, allowing: Any) -> None:
    server.stream("/exact", 10_000, content_length=False)
    page = await allowing(server, text_max_bytes=10_000).fetch(server.url("/exact"))
    assert len(page.body) == 10_000


async def test_gzip_is_decoded_and_a_gzip_bomb_is_cut(server: Any, allowing: Any) -> None:
    server.page("/small", gzip.compress(b"hello " * 100), headers={"Content-Encoding": "gzip"})
    bomb = gzip.compress(b"\0" * 50_000_000)
    server.page("/bomb", bomb, content_type="text/plain", headers={"Content-Encoding": "gzip"})
    fetcher = allowing(server, text_max_bytes=1_000_000)
    page = await fetcher.fetch(server.url("/small"))
    assert page.body == b"hello " * 100
    error = await refused(fetcher, server.url("/bomb"))
    assert error.code == "too_large"
    assert len(bomb) < 1_000_000


async def test_unknown_content_encoding_is_unsupported(server: Any, allowing: Any) -> None:
    server.page("/br", b"\x00\x01", headers={"Content-Encoding": "br"})
    error = await refused(allowing(server), server.url("/br"))
    assert error.code == "unsupported_content" and "br" in error.message


def _pdf(size: int) -> bytes:
    head = b"%PDF-1.4\n"
    return head + b"0" * (size - len(head))


async def test_pdf_under_its_own_ceiling(server: Any, allowing: Any) -> None:
    server.page("/doc.pdf", _pdf(30_000), content_type="application/pdf")
    fetcher = allowing(server, text_max_bytes=10_000, pdf_max_bytes=40_000)
    page = await fetcher.fetch(server.url("/doc.pdf"))
    assert page.kind == "pdf" and len(page.body) == 30_000


async def test_pdf_over_its_ceiling_names_the_limit(server: Any, allowing: Any) -> None:
    server.page("/doc.pdf", _pdf(50_000), content_type="application/pdf")
    server.stream("/streamed.pdf", 50_000, content_type="application/pdf", content_length=False)
    fetcher = allowing(server, pdf_max_bytes=40_000)
    for path in ("/doc.pdf", "/streamed.pdf"):
        error = await refused(fetcher, server.url(path))
        assert error.code == "too_large"
        assert error.data["setting"] == "pdf_max_bytes"
        assert "PDF" in error.message and "pdf_max_bytes" in error.message
        assert "39.0625 KiB" in error.message


async def test_pdf_served_as_octet_stream_is_sniffed(server: Any, allowing: Any) -> None:
    server.page("/download", _pdf(2_000), content_type="application/octet-stream")
    page = await allowing(server).fetch(server.url("/download"))
    assert page.kind == "pdf"


async def test_content_kinds_the_caller_cannot_use(server: Any, allowing: Any) -> None:
    server.page("/img", b"\x89PNG....", content_type="image/png")
    error = await refused(allowing(server), server.url("/img"))
    assert error.code == "unsupported_content" and "image/png" in error.message
    page = await allowing(server).fetch(server.url("/img"), accept=("text", "pdf", "other"))
    assert page.kind == "other"


async def test_search_provider_can_accept_text_only(server: Any, allowing: Any) -> None:
    server.page("/doc.pdf", _pdf(100), content_type="application/pdf")
    error = await refused(allowing(server), server.url("/doc.pdf"), accept=("text",))
    assert error.code == "unsupported_content"


# -- DNS rebinding -------------------------------------------------------------------------


class RebindingResolver:
    """Answers ``first`` on the first lookup and ``later`` on every one after it."""

    def __init__(self, first: list[str], later: list[str]) -> None:
        self.answers = [[ip_address(a) for a in first], [ip_address(a) for a in later]]
        self.calls = 0

    async def resolve(self, host: str, port: int) -> list[Any]:
        self.calls += 1
        return self.answers[0 if self.calls == 1 else 1]


async def test_rebinding_between_hops_is_refused(twins: Any, allowing: Any) -> None:
    public, secret = twins
    public.redirect("/start", "/secret")
    public.page("/secret", "public copy")
    resolver = RebindingResolver(["127.0.0.2"], ["127.0.0.1"])
    error = await refused(
        allowing(public, resolver=resolver), public.url("/start", host="rebind.test")
    )
    assert error.code == "blocked_address"
    assert "rebind.test" in error.message and "127.0.0.1" in error.message
    assert resolver.calls == 2
    assert public.paths == ["/start"]
    assert secret.connections == 0


async def test_rebinding_between_fetches_is_refused(twins: Any, allowing: Any) -> None:
    public, secret = twins
    public.page("/secret", "public copy")
    resolver = RebindingResolver(["127.0.0.2"], ["127.0.0.1"])
    fetcher = allowing(public, resolver=resolver)
    url = public.url("/secret", host="rebind.test")
    assert (await fetcher.fetch(url)).body == b"public copy"
    error = await refused(fetcher, url)
    assert error.code == "blocked_address"
    assert secret.connections == 0


async def test_one_bad_answer_refuses_the_hop(twins: Any, allowing: Any) -> None:
    public, secret = twins
    resolver = StaticResolver({"mixed.test": ["127.0.0.2", "127.0.0.1"]})
    error = await refused(allowing(public, resolver=resolver), public.url("/", host="mixed.test"))
    assert error.code == "blocked_address"
    assert public.connections == 0 and secret.connections == 0


async def test_connection_goes_only_to_checked_addresses(twins: Any, allowing: Any) -> None:
    """The resolver is asked once per hop; the socket never does its own lookup."""
    public, secret = twins
    public.page("/", "ok")
    resolver = RebindingResolver(["127.0.0.2"], ["127.0.0.1"])
    page = await allowing(public, resolver=resolver).fetch(public.url("/", host="once.test"))
    assert page.address == "127.0.0.2"
    assert resolver.calls == 1
    assert secret.connections == 0


async def test_ipv6_loopback_through_the_allowance(make_server: Any, allowing: Any) -> None:
    try:
        srv = make_server("::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    srv.page("/", "v6")
    page = await allowing(srv).fetch(srv.url("/"))
    assert page.body == b"v6" and page.address == "::1"
    assert srv.requests[0].headers["host"] == f"[::1]:{srv.port}"


async def test_credentials_in_query_strings_stay_out_of_error_messages(
    server: Any, allowing: Any
) -> None:
    server.page("/search", "denied", status=401)
    error = await refused(
        allowing(server), server.url("/search?q=x&api_key=sk-live-123"), raise_for_status=True
    )
    assert error.code == "http_error"
    assert "sk-live-123" not in error.message and "sk-live-123" not in str(error.data)
    assert "api_key=[redacted]" in error.message
