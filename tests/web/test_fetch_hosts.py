"""Host spellings, read as the operating system reads them; name rules; host patterns."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from corral.web.fetch import FetchError, HostPattern, parse_host
from corral.web.fetch.hosts import name_refusal, parse_ipv4_spelling

SPELLINGS = {
    "127.0.0.1": "127.0.0.1",
    "127.1": "127.0.0.1",
    "127.0.1": "127.0.0.1",
    "2130706433": "127.0.0.1",
    "0x7f000001": "127.0.0.1",
    "0X7F000001": "127.0.0.1",
    "017700000001": "127.0.0.1",
    "0177.0.0.1": "127.0.0.1",
    "0177.0000.0000.0001": "127.0.0.1",
    "0x7f.1": "127.0.0.1",
    "0x7f.0x0.0x0.0x1": "127.0.0.1",
    "127.000000000000000.1": "127.0.0.1",
    "127.0.0.1.": "127.0.0.1",
    "0": "0.0.0.0",
    "0.0.0.0": "0.0.0.0",
    "169.254.43518": "169.254.169.254",
    "0xA9.254.0251.0376": "169.254.169.254",
    "0xc0.052000001": "192.168.0.1",
    "4294967295": "255.255.255.255",
    "\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11": "127.0.0.1",
    "127\u30020\u30020\u30021": "127.0.0.1",
    "\u2460\u2461\u2466.\u24ea.\u24ea.\u2460": "127.0.0.1",
    "%31%32%37.0.0.1": "127.0.0.1",
    "127%E3%80%820%E3%80%820%E3%80%821": "127.0.0.1",
    "[::1]": "::1",
    "[0000::1]": "::1",
    "[::]": "::",
    "[::FFFF:127.0.0.1]": "::ffff:7f00:1",
    "[0:0:0:0:0:ffff:127.0.0.1]": "::ffff:7f00:1",
}


@pytest.mark.parametrize(("raw", "expected"), sorted(SPELLINGS.items()))
def test_literal_spellings(raw: str, expected: str) -> None:
    host = parse_host(raw)
    assert host.address == ip_address(expected)
    assert host.name == str(ip_address(expected))


NAMES = {
    "Example.COM": "example.com",
    "example.com.": "example.com",
    "b\u00fccher.example": "xn--bcher-kva.example",
    "\u24d4\u24e7\u24d0\u24dc\u24df\u24db\u24d4.\u24d2\u24de\u24dc": "example.com",
    "EXAMPLE\uff0eCOM": "example.com",
    "r3---sn-abc.googlevideo.com": "r3---sn-abc.googlevideo.com",
    "_dmarc.example.com": "_dmarc.example.com",
    "127.0.0.1.nip.io": "127.0.0.1.nip.io",
    "%6c%6f%63%61%6c%68%6f%73%74": "localhost",
    "\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3": "localhost",
}


@pytest.mark.parametrize(("raw", "expected"), sorted(NAMES.items()))
def test_names_are_normalised(raw: str, expected: str) -> None:
    host = parse_host(raw)
    assert host.address is None and host.name == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "0x",
        "08.0.0.1",
        "0o177.0.0.1",
        "o177.0.0.1",
        "1.2.3.4.5",
        "256.0.0.1",
        "1.2.65536",
        "4294967296",
        "1..2.3",
        "example.123",
        "exa mple.com",
        "exa_mple.com:80",
        "a@b",
        "-bad.example",
        "bad-.example",
        "a" * 64 + ".example",
        ".".join(["a" * 60] * 5),
        "%zz.example",
        "%ff.example",
        "127.0.0.1%00.evil.com",
        "\u0661\u0662\u0667.\u0660.\u0660.\u0661",
        "[127.0.0.1]",
        "[v1.fe]",
        "[::1",
        "xn--a.example",
        "xn--127-.example",
        "ex\u200bample.com",
    ],
)
def test_malformed_hosts_are_bad_urls(raw: str) -> None:
    with pytest.raises(FetchError) as caught:
        parse_host(raw)
    assert caught.value.code == "bad_url"


def test_zone_identifiers_are_blocked() -> None:
    for raw in ("[fe80::1%25eth0]", "[::1%lo]"):
        with pytest.raises(FetchError) as caught:
            parse_host(raw)
        assert caught.value.code == "blocked_address"


def test_ipv4_spelling_parser_matches_inet_aton_edge_cases() -> None:
    assert parse_ipv4_spelling("1.16777215") == ip_address("1.255.255.255")
    assert parse_ipv4_spelling("1.2.65535") == ip_address("1.2.255.255")
    with pytest.raises(FetchError):
        parse_ipv4_spelling("1.16777216")
    with pytest.raises(FetchError):
        parse_ipv4_spelling("0x" + "0" * 50 + "1")


@pytest.mark.parametrize(
    "raw",
    [
        "localhost",
        "LOCALHOST.",
        "foo.localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "printer.local",
        "metadata.google.internal",
        "router.home.arpa",
        "metadata",
        "intranet",
    ],
)
def test_local_names_are_refused(raw: str) -> None:
    assert name_refusal(parse_host(raw)) is not None


@pytest.mark.parametrize("raw", ["example.com", "localhost.example.com", "local.example"])
def test_public_names_pass(raw: str) -> None:
    assert name_refusal(parse_host(raw)) is None


def test_host_patterns() -> None:
    exact = HostPattern.parse("Example.com")
    wild = HostPattern.parse("*.example.com")
    domain = HostPattern.parse("example.com", with_subdomains=True)
    address = HostPattern.parse("93.184.215.14")
    apex, sub, deep, other = (
        parse_host(h)
        for h in ("example.com", "www.example.com", "a.b.example.com", "badexample.com")
    )
    assert exact.matches(apex) and not exact.matches(sub)
    assert wild.matches(sub) and wild.matches(deep) and not wild.matches(apex)
    assert domain.matches(apex) and domain.matches(deep) and not domain.matches(other)
    assert address.matches(parse_host("0x5db8d70e")) and not address.matches(apex)
    assert str(wild) == "*.example.com"
    for bad in ("*", "*.", "https://example.com/", "ex*mple.com", "*.1.2.3.4", "a b"):
        with pytest.raises(FetchError):
            HostPattern.parse(bad)
