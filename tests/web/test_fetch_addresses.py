"""Which addresses are public, and how the test allowance is kept apart from the default."""

from __future__ import annotations

from ipaddress import ip_address, ip_network

import pytest

from corral.web.fetch import AddressRules, Fetcher, FetchPolicy, non_public_reason
from corral.web.fetch.addresses import connect_form, parse_networks

NON_PUBLIC = {
    "0.0.0.0": "this network",
    "0.1.2.3": "this network",
    "10.1.2.3": "private",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.254": "carrier-grade NAT",
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "169.254.169.254": "link-local",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.0.0.8": "IETF protocol assignments",
    "192.0.2.1": "documentation",
    "192.88.99.1": "6to4 relay anycast",
    "192.168.0.1": "private",
    "198.18.0.1": "benchmarking",
    "198.19.255.255": "benchmarking",
    "198.51.100.1": "documentation",
    "203.0.113.1": "documentation",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "240.0.0.1": "reserved",
    "255.255.255.255": "broadcast",
    "::": "unspecified",
    "::1": "loopback",
    "::ffff:127.0.0.1": "IPv4-mapped form of 127.0.0.1, which is loopback",
    "::ffff:10.0.0.1": "IPv4-mapped form of 10.0.0.1",
    "::ffff:169.254.169.254": "IPv4-mapped",
    "::127.0.0.1": "IPv4-compatible",
    "::8.8.8.8": "IPv4-compatible",
    "::ffff:0:8.8.8.8": "IPv4-translated",
    "64:ff9b::127.0.0.1": "NAT64 form of 127.0.0.1",
    "64:ff9b::a9fe:a9fe": "NAT64 form of 169.254.169.254",
    "64:ff9b:1::808:808": "local-use NAT64",
    "2002:7f00:1::": "6to4",
    "2002:808:808::": "6to4",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
    "2001:db8::1": "documentation",
    "2001:2::1": "IETF protocol assignments",
    "3fff::1": "documentation",
    "100::1": "discard-only",
    "fc00::1": "unique local",
    "fd12:3456::1": "unique local",
    "fe80::1": "link-local",
    "fec0::1": "site-local",
    "ff02::1": "multicast",
    "4000::1": "outside IPv6 global unicast",
    "5f00::1": "segment routing",
}

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.255",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
]


@pytest.mark.parametrize(("text", "reason"), sorted(NON_PUBLIC.items()))
def test_non_public_addresses_are_named(text: str, reason: str) -> None:
    found = non_public_reason(ip_address(text))
    assert found is not None and reason in found


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text: str) -> None:
    assert non_public_reason(ip_address(text)) is None


def test_scoped_ipv6_is_refused() -> None:
    found = non_public_reason(ip_address("fe80::1%eth0"))
    assert found is not None and "eth0" in found


def test_mapped_addresses_connect_as_ipv4() -> None:
    assert connect_form(ip_address("::ffff:8.8.8.8")) == ip_address("8.8.8.8")
    assert connect_form(ip_address("64:ff9b::8.8.8.8")) == ip_address("64:ff9b::808:808")
    assert connect_form(ip_address("1.1.1.1")) == ip_address("1.1.1.1")


def test_default_rules_refuse_loopback() -> None:
    rules = AddressRules()
    assert rules.allowances == ()
    assert rules.refusal(ip_address("127.0.0.1")) is not None
    assert rules.refusal(ip_address("8.8.8.8")) is None
    assert Fetcher().addresses.allowances == ()
    assert repr(rules) == "AddressRules()"


def test_default_cannot_be_loosened_by_construction() -> None:
    with pytest.raises(TypeError):
        AddressRules(allow=[ip_network("127.0.0.0/8")])  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        FetchPolicy(allow_networks=(ip_network("127.0.0.0/8"),))  # type: ignore[call-arg]
    rules = AddressRules()
    with pytest.raises(AttributeError):
        rules.allow = (ip_network("127.0.0.0/8"),)  # type: ignore[attr-defined]


def test_unsafe_allowance_is_explicit_and_narrow() -> None:
    rules = AddressRules.unsafe_allowing(ip_network("127.0.0.1/32"))
    assert rules.refusal(ip_address("127.0.0.1")) is None
    assert rules.refusal(ip_address("127.0.0.2")) is not None
    assert rules.refusal(ip_address("::ffff:127.0.0.1")) is not None
    assert "unsafe_allowing" in repr(rules)
    with pytest.raises(ValueError):
        AddressRules.unsafe_allowing()
    with pytest.raises(TypeError):
        AddressRules.unsafe_allowing("127.0.0.1/32")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        AddressRules.unsafe_allowing(ip_network("0.0.0.0/0"))


def test_denied_networks_win_over_allowances() -> None:
    rules = AddressRules.unsafe_allowing(
        ip_network("127.0.0.0/8"), deny=[ip_network("127.0.0.5/32")]
    )
    assert rules.refusal(ip_address("127.0.0.4")) is None
    found = rules.refusal(ip_address("127.0.0.5"))
    assert found is not None and "denied" in found
    public = AddressRules(deny=[ip_network("8.8.8.0/24")])
    assert public.refusal(ip_address("8.8.8.8")) is not None


def test_parse_networks_from_settings() -> None:
    assert parse_networks([" 10.0.0.1/8", "2001:db8::/32"]) == (
        ip_network("10.0.0.0/8"),
        ip_network("2001:db8::/32"),
    )
