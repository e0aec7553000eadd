"""The Host/Origin allow-list of ``/mcp`` (see ``test_mcp_http`` for it on a real server)."""

from __future__ import annotations

from corral.server.mcp_origin import AllowedHosts


def scope(host: str | None, origin: str | None = None) -> dict[str, object]:
    headers = [(b"host", host.encode())] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "http", "headers": headers}


def test_loopback_names_on_any_port_and_the_public_url_are_allowed() -> None:
    hosts = AllowedHosts(public_url="https://corral.example.org", bind_host="0.0.0.0")
    for host in ("localhost:1", "127.0.0.1:8765", "[::1]:9", "LOCALHOST"):
        assert hosts.refusal(scope(host)) is None, host
    assert hosts.refusal(scope("corral.example.org", "https://corral.example.org")) is None
    assert hosts.refusal(scope("localhost:8765", "http://localhost:3000")) is None


def test_other_names_a_missing_host_and_foreign_origins_are_refused() -> None:
    hosts = AllowedHosts(public_url=None, bind_host="0.0.0.0")
    refused = hosts.refusal(scope("evil.example.com"))
    assert refused is not None and "public_url" in refused
    assert hosts.refusal(scope(None)) is not None
    assert hosts.refusal(scope("0.0.0.0:8765")) is not None
    origin = hosts.refusal(scope("localhost", "http://evil.example.com"))
    assert origin is not None and "Origin" in origin
    assert hosts.refusal(scope("localhost", "null")) is not None
    assert hosts.refusal(scope("localhost", "file://localhost")) is not None


def test_a_specific_bind_address_is_a_name_the_server_is_known_by() -> None:
    hosts = AllowedHosts(public_url=None, bind_host="10.0.0.5")
    assert hosts.refusal(scope("10.0.0.5:8765", "http://10.0.0.5:8765")) is None
    assert hosts.refusal(scope("10.0.0.6:8765")) is not None
