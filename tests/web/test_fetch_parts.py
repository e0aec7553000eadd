"""The smaller parts of the pipeline: body decoding, redirect rewriting, the pinned backend,
the policy object and the package's public surface."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator, Iterable
from ipaddress import ip_address, ip_network
from typing import Any, get_args

import anyio
import httpcore
import pytest

import corral.web.fetch as fetch
from corral.errors import ConfigError
from corral.web.fetch import FetchError, FetchPolicy
from corral.web.fetch.body import BodyDecoder, declared_kind, media_type, read_limited, sniffed_kind
from corral.web.fetch.redirects import is_credential_header, may_follow, redirected
from corral.web.fetch.request import Outgoing
from corral.web.fetch.transport import PinnedBackend

# -- body ----------------------------------------------------------------------------------


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _too_large(size: int) -> FetchError:
    return FetchError(f"too large: {size}", code="too_large")


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda d: zlib.compress(d)[2:-4]),  # raw deflate, as many servers send
        (None, lambda d: d),
        ("identity", lambda d: d),
    ],
)
async def test_decoding(encoding: str | None, encode: object) -> None:
    data = b"payload " * 5000
    raw = encode(data)  # type: ignore[operator]
    pieces = [raw[i : i + 777] for i in range(0, len(raw), 777)]
    body = await read_limited(_chunks(*pieces), BodyDecoder(encoding), 10**6, _too_large)
    assert body == data


async def test_multi_member_gzip_and_trailing_garbage() -> None:
    raw = gzip.compress(b"one ") + gzip.compress(b"two") + b"\0\0junk"
    body = await read_limited(_chunks(raw), BodyDecoder("gzip"), 1000, _too_large)
    assert body == b"one two"


async def test_decompression_is_bounded() -> None:
    bomb = gzip.compress(b"\0" * 20_000_000)
    decoder = BodyDecoder("gzip")
    out = decoder.feed(bomb, 1000)
    assert len(out) == 1001  # stops one past the room, never inflating the rest
    with pytest.raises(FetchError) as caught:
        await read_limited(_chunks(bomb), BodyDecoder("gzip"), 1000, _too_large)
    assert caught.value.code == "too_large"


async def test_corrupt_gzip() -> None:
    with pytest.raises(FetchError) as caught:
        await read_limited(_chunks(b"not gzip at all"), BodyDecoder("gzip"), 100, _too_large)
    assert caught.value.code == "network_error"


def test_unknown_encoding() -> None:
    with pytest.raises(FetchError) as caught:
        BodyDecoder("br")
    assert caught.value.code == "unsupported_content"


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("text/html; charset=UTF-8", "text"),
        ("application/json", "text"),
        ("application/ld+json", "text"),
        ("application/rss+xml", "text"),
        ("text/markdown", "text"),
        ("application/pdf", "pdf"),
        ("image/png", "other"),
        ("application/zip", "other"),
        ("application/octet-stream", None),
        (None, None),
    ],
)
def test_declared_kinds(content_type: str | None, kind: str | None) -> None:
    assert declared_kind(media_type(content_type)[0]) == kind


def test_media_type_and_sniffing() -> None:
    assert media_type('Text/HTML; Charset="ISO-8859-1"') == ("text/html", "ISO-8859-1")
    assert sniffed_kind("application/octet-stream", b"%PDF-1.7") == "pdf"
    assert sniffed_kind("", b"<html>") == "text"
    assert sniffed_kind("application/octet-stream", b"PK\3\4") == "other"


# -- redirects -----------------------------------------------------------------------------


def test_redirect_rewriting() -> None:
    post = Outgoing(
        method="POST",
        headers=(("Content-Type", "application/json"), ("Authorization", "Bearer k")),
        body=b"{}",
    )
    for status in (301, 302, 303):
        after = redirected(post, status, cross_origin=False)
        assert after.method == "GET" and after.body is None
        assert ("Content-Type", "application/json") not in after.headers
        assert ("Authorization", "Bearer k") in after.headers
    for status in (307, 308):
        after = redirected(post, status, cross_origin=False)
        assert after.method == "POST" and after.body == b"{}"
    head = Outgoing(method="HEAD", headers=())
    assert redirected(head, 303, cross_origin=False).method == "HEAD"
    crossed = redirected(post, 303, cross_origin=True)
    assert all(name != "Authorization" for name, _ in crossed.headers)


def test_bodies_never_cross_origins() -> None:
    post = Outgoing(method="POST", headers=(), body=b"{}")
    assert may_follow(post, 307, cross_origin=False)
    assert not may_follow(post, 307, cross_origin=True)
    assert not may_follow(post, 308, cross_origin=True)
    assert may_follow(post, 303, cross_origin=True)
    assert not may_follow(post, 300, cross_origin=False)


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("Authorization", True),
        ("Cookie", True),
        ("X-API-Key", True),
        ("X-Subscription-Token", True),
        ("Ocp-Apim-Subscription-Key", True),
        ("Accept-Language", False),
        ("User-Agent", False),
    ],
)
def test_credential_headers(name: str, credential: bool) -> None:
    assert is_credential_header(name) is credential


# -- the pinned backend --------------------------------------------------------------------


class RecordingBackend(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.attempts: list[str] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append(host)
        if host == "192.0.2.1":
            raise httpcore.ConnectError("refused")
        if host == "192.0.2.9":
            await anyio.sleep_forever()
        return httpcore.AsyncNetworkStream()


async def test_backend_connects_only_to_pinned_addresses() -> None:
    inner = RecordingBackend()
    backend = PinnedBackend(inner)
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("example.com", 80)
    backend.pin("example.com", 80, [ip_address("192.0.2.1"), ip_address("198.51.100.1")])
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("example.com", 443)
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("other.example", 80)
    await backend.connect_tcp("example.com", 80)
    assert inner.attempts == ["192.0.2.1", "198.51.100.1"]
    assert backend.connections == [("example.com", 80, ip_address("198.51.100.1"))]
    backend.pin("next.example", 80, [ip_address("198.51.100.2")])
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("example.com", 80)
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_unix_socket("/var/run/docker.sock")


async def test_an_address_that_swallows_packets_does_not_eat_the_budget() -> None:
    inner = RecordingBackend()
    backend = PinnedBackend(inner, attempt_seconds=0.05)
    backend.pin("example.com", 80, [ip_address("192.0.2.9"), ip_address("198.51.100.1")])
    with anyio.fail_after(5):
        await backend.connect_tcp("example.com", 80)
    assert inner.attempts == ["192.0.2.9", "198.51.100.1"]
    backend.pin("example.com", 80, [ip_address("192.0.2.9"), ip_address("192.0.2.1")])
    with pytest.raises(httpcore.ConnectError):
        await backend.connect_tcp("example.com", 80)


# -- policy --------------------------------------------------------------------------------


def test_policy_defaults() -> None:
    policy = FetchPolicy()
    assert policy.allowed_ports == frozenset({80, 443, 8080, 8443})
    assert policy.ceiling("pdf") == (policy.pdf_max_bytes, "pdf_max_bytes")
    assert policy.ceiling("text") == (policy.text_max_bytes, "text_max_bytes")
    assert policy.timeout_seconds(None) == policy.default_timeout_ms / 1000
    assert policy.timeout_seconds(10**9) == policy.max_timeout_ms / 1000
    with pytest.raises(ValueError):
        policy.timeout_seconds(0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"allowed_ports": frozenset({0})},
        {"text_max_bytes": 0},
        {"max_redirects": -1},
        {"default_timeout_ms": 200_000},
        {"deny_hosts": ("https://example.com/",)},
    ],
)
def test_policy_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        FetchPolicy(**kwargs)  # type: ignore[arg-type]


def test_policy_deny_patterns() -> None:
    policy = FetchPolicy(deny_hosts=("Example.com", "*.ads.test"), deny_networks=())
    assert [str(p) for p in policy.deny_patterns] == ["example.com", "*.ads.test"]
    assert ip_network("10.0.0.0/8") not in policy.deny_networks


# -- public surface ------------------------------------------------------------------------


def test_public_api_is_sorted_and_complete() -> None:
    assert fetch.__all__ == sorted(fetch.__all__, key=lambda n: (not n.isupper(), n))
    for name in fetch.__all__:
        assert hasattr(fetch, name), name
    codes = set(get_args(fetch.FetchErrorCode))
    assert {
        "blocked_address",
        "blocked_scheme",
        "blocked_host",
        "too_many_redirects",
        "timeout",
        "too_large",
        "unsupported_content",
        "http_error",
    } <= codes
