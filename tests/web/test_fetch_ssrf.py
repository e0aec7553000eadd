"""SSRF: public bypass spellings must not reach a loopback server holding a secret.

Every case in ``ssrf_corpus.json`` is fetched for real under the production address rules
(``AddressRules()``, the default), with the secret server's port allowed so the refusal
comes from the address, host or URL checks, not the port list. The servers count every
connection they accept; it must stay zero.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network, ip_network
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.web.fetch import (
    AddressRules,
    Fetcher,
    FetchError,
    FetchPolicy,
    StaticResolver,
    non_public_reason,
    parse_host,
)

CORPUS = json.loads((Path(__file__).parent / "ssrf_corpus.json").read_text(encoding="utf-8"))
CASES: list[dict[str, str]] = CORPUS["cases"]


@pytest.fixture(scope="module")
def secrets_at_home() -> Iterator[tuple[Any, Any | None]]:
    """The secret, served on 127.0.0.1:P and (when the host has IPv6) on [::1]:P."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Counting(ThreadingHTTPServer):
        daemon_threads = True
        accepted = 0

        def verify_request(self, request: Any, client_address: Any) -> bool:
            self.accepted += 1
            return True

    class Secret(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"TOP-SECRET")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    import threading

    v4 = Counting(("127.0.0.1", 0), Secret)
    port = v4.server_address[1]
    v6: Counting | None
    try:

        class Counting6(Counting):
            address_family = socket.AF_INET6

        v6 = Counting6(("::1", port), Secret)
    except OSError:
        v6 = None
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        for s in (v4, v6)
        if s is not None
    ]
    for thread in threads:
        thread.start()
    try:
        yield v4, v6
    finally:
        for srv in (v4, v6):
            if srv is not None:
                srv.shutdown()
                srv.server_close()


def _connections(servers: tuple[Any, Any | None]) -> int:
    return sum(s.accepted for s in servers if s is not None)


def _fetchers(port: int) -> list[Fetcher]:
    resolver = StaticResolver(CORPUS["dns"])
    return [
        # The production rules, with only the secret's port opened.
        Fetcher(FetchPolicy(allowed_ports=frozenset({80, 443, port})), resolver=resolver),
        # Everything default (ports included); only the resolver is the corpus' DNS.
        Fetcher(resolver=resolver),
    ]


def test_corpus_is_large_and_distinct() -> None:
    urls = [case["url"] for case in CASES]
    assert len(urls) >= 60
    assert len(set(urls)) == len(urls)


async def test_the_secret_is_reachable_through_the_test_allowance(
    secrets_at_home: tuple[Any, Any | None],
) -> None:
    """Positive control: the server works, so zero connections below means refusal."""
    v4, _ = secrets_at_home
    port = v4.server_address[1]
    before = _connections(secrets_at_home)
    fetcher = Fetcher(
        FetchPolicy(allowed_ports=frozenset({port})),
        addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.1/32")),
    )
    page = await fetcher.fetch(f"http://127.0.0.1:{port}/secret")
    assert page.body == b"TOP-SECRET"
    assert _connections(secrets_at_home) == before + 1


@pytest.mark.parametrize("case", CASES, ids=[case["url"] for case in CASES])
async def test_bypass_spelling_is_refused(
    case: dict[str, str], secrets_at_home: tuple[Any, Any | None]
) -> None:
    port = secrets_at_home[0].server_address[1]
    url = case["url"].replace("{port}", str(port))
    before = _connections(secrets_at_home)
    strict, default = _fetchers(port)
    with pytest.raises(FetchError) as caught:
        await strict.fetch(url, timeout_ms=5_000)
    assert caught.value.code == case["code"], caught.value.message
    assert "TOP-SECRET" not in caught.value.message
    with pytest.raises(FetchError):
        await default.fetch(url, timeout_ms=5_000)
    assert _connections(secrets_at_home) == before


# -- spellings of IPv4 addresses, generated ------------------------------------------------

_NON_PUBLIC = [
    ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]


@st.composite
def non_public_ipv4(draw: st.DrawFn) -> IPv4Address:
    net = draw(st.sampled_from(_NON_PUBLIC))
    assert isinstance(net, IPv4Network)
    offset = draw(st.integers(0, net.num_addresses - 1))
    return IPv4Address(int(net.network_address) + offset)


@st.composite
def spelling(draw: st.DrawFn, address: IPv4Address) -> tuple[str, str]:
    """``(ascii_spelling, url_host)``: inet_aton syntax, then optionally disguised."""
    value = int(address)
    parts_count = draw(st.integers(1, 4))
    parts = [(value >> (24 - 8 * i)) & 0xFF for i in range(parts_count - 1)]
    parts.append(value & ((1 << (8 * (5 - parts_count))) - 1))
    rendered = []
    for part in parts:
        base = draw(st.sampled_from(["dec", "oct", "hex"]))
        if base == "dec":
            rendered.append(str(part))
        elif base == "oct":
            rendered.append("0" * draw(st.integers(1, 4)) + format(part, "o"))
        else:
            digits = "0" * draw(st.integers(0, 4)) + format(part, "x")
            digits = "".join(c.upper() if draw(st.booleans()) else c for c in digits)
            rendered.append(draw(st.sampled_from(["0x", "0X"])) + digits)
    ascii_form = ".".join(rendered)
    host = ascii_form + ("." if draw(st.booleans()) else "")
    disguise = draw(st.sampled_from(["none", "fullwidth", "ideographic", "percent", "mixed"]))
    if disguise == "fullwidth":
        host = "".join(chr(ord(c) + 0xFEE0) if c.isalnum() or c == "." else c for c in host)
    elif disguise == "ideographic":
        host = host.replace(".", "\u3002")
    elif disguise == "percent":
        host = "".join(f"%{ord(c):02X}" for c in host)
    elif disguise == "mixed":
        host = "".join(f"%{ord(c):02x}" if draw(st.booleans()) else c for c in host)
    return ascii_form, host


def _with_spelling(address: IPv4Address) -> st.SearchStrategy[Any]:
    return st.tuples(st.just(address), spelling(address))


@given(st.integers(0, 2**32 - 1).map(IPv4Address).flatmap(_with_spelling))
@settings(max_examples=400, deadline=None, database=None)
def test_numeric_hosts_read_as_the_os_reads_them(sample: Any) -> None:
    address, (ascii_form, host) = sample
    assert socket.inet_aton(ascii_form) == address.packed  # the C library agrees
    assert parse_host(host).address == address


@given(sample=non_public_ipv4().flatmap(_with_spelling))
@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_every_spelling_of_a_non_public_address_is_refused(
    sample: Any, secrets_at_home: tuple[Any, Any | None]
) -> None:
    address, (_, host) = sample
    assert non_public_reason(address) is not None
    port = secrets_at_home[0].server_address[1]

    class NoResolver:
        async def resolve(self, name: str, port: int) -> list[Any]:
            raise AssertionError(f"numeric host {host!r} reached the resolver as {name!r}")

    fetcher = Fetcher(FetchPolicy(allowed_ports=frozenset({80, 443, port})), resolver=NoResolver())
    before = _connections(secrets_at_home)

    async def attempt() -> FetchError:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(f"http://{host}:{port}/secret", timeout_ms=5_000)
        return caught.value

    error = anyio.run(attempt)
    assert error.code == "blocked_address", error.message
    assert str(address) in error.message
    assert _connections(secrets_at_home) == before
