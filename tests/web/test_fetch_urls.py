"""Strict URL parsing and redirect Location resolution."""

from __future__ import annotations

import pytest

from corral.web.fetch import FetchError, parse_url
from corral.web.fetch.urls import join_location


@pytest.mark.parametrize(
    ("raw", "canonical", "port"),
    [
        ("http://example.com", "http://example.com/", 80),
        ("HTTPS://Example.COM:443/a?b=1#frag", "https://example.com/a?b=1", 443),
        ("https://example.com:8443", "https://example.com:8443/", 8443),
        ("http://example.com:/x", "http://example.com/x", 80),
        ("http://example.com?q", "http://example.com/?q", 80),
        ("  http://example.com/  ", "http://example.com/", 80),
        ("http://[2606:4700::1111]:8080/", "http://[2606:4700::1111]:8080/", 8080),
        ("http://example.com:00080/", "http://example.com/", 80),
        ("http://b\u00fccher.example/\u00fc", "http://xn--bcher-kva.example/\u00fc", 80),
    ],
)
def test_valid_urls(raw: str, canonical: str, port: int) -> None:
    target = parse_url(raw)
    assert target.url == canonical and target.port == port


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("file:///etc/passwd", "blocked_scheme"),
        ("ftp://example.com/", "blocked_scheme"),
        ("javascript:alert(1)", "blocked_scheme"),
        ("example.com/path", "bad_url"),
        ("example.com:8080/path", "bad_url"),
        ("//example.com/", "bad_url"),
        ("http:example.com", "bad_url"),
        ("http:/example.com", "bad_url"),
        ("http:///example.com", "bad_url"),
        ("http://", "bad_url"),
        ("http://user:pw@example.com/", "bad_url"),
        ("http://@example.com/", "bad_url"),
        ("http://example.com\\@evil.com/", "bad_url"),
        ("http://exa mple.com/", "bad_url"),
        ("http://example.com/a b", "bad_url"),
        ("http://example.com/a\nb", "bad_url"),
        ("http://example.com:99999/", "bad_url"),
        ("http://example.com:0/", "bad_url"),
        ("http://example.com:8o/", "bad_url"),
        ("http://::1/", "bad_url"),
        ("http://[::1]x/", "bad_url"),
        ("http://x/" + "a" * 40_000, "bad_url"),
    ],
)
def test_refused_urls(raw: str, code: str) -> None:
    with pytest.raises(FetchError) as caught:
        parse_url(raw)
    assert caught.value.code == code
    assert caught.value.data.get("url")


def test_credentials_message_says_what_to_do() -> None:
    with pytest.raises(FetchError) as caught:
        parse_url("https://key:secret@api.example.com/")
    assert "credentials" in caught.value.message and "header" in caught.value.message


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/b", "http://example.com/b"),
        ("b", "http://example.com/dir/b"),
        ("../c?x=1", "http://example.com/c?x=1"),
        ("?q=2", "http://example.com/dir/page?q=2"),
        ("//other.example/x", "http://other.example/x"),
        ("https://other.example/y", "https://other.example/y"),
        ("  /spaced  ", "http://example.com/spaced"),
    ],
)
def test_locations_are_resolved_against_the_hop(location: str, expected: str) -> None:
    base = parse_url("http://example.com/dir/page")
    assert join_location(base, location) == expected


@pytest.mark.parametrize("location", ["", "/\\evil.com", "\\\\evil.com"])
def test_unusable_locations(location: str) -> None:
    with pytest.raises(FetchError) as caught:
        join_location(parse_url("http://example.com/"), location)
    assert caught.value.code == "bad_url"
