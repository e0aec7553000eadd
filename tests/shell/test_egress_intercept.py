"""TLS interception on loopback: real TLS both ways, a real HTTP server upstream, real
clients (httpx, curl) through a CONNECT front that hands each tunnel to ``intercept``."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import shutil
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.credentials import CredentialBinding, placeholder
from corral.shell.egress.intercept import ConnectionLog, RequestPolicy, UpstreamConnector
from tests.shell.egress_tls_harness import (
    Front,
    Log,
    LoopbackConnector,
    RulePolicy,
    Upstream,
    client_trusting,
    connect_front,
    https_upstream,
)

PUSH = "/org/repo/git-receive-pack"


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority(tmp_path / "private")


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    with https_upstream(tmp_path) as running:
        yield running


def _policy() -> RulePolicy:
    return RulePolicy(
        {
            ("api.test", "GET"): None,
            ("api.test", "POST"): PUSH,
            ("other.test", "GET"): None,
        }
    )


@pytest.fixture
async def front(
    ca: CertificateAuthority, upstream: Upstream, request: pytest.FixtureRequest
) -> AsyncIterator[Front]:
    credentials: list[CredentialBinding] = getattr(request, "param", [])
    async with connect_front(
        ca=ca,
        policy=_policy(),
        credentials=credentials,
        connector=LoopbackConnector(upstream.port),
        upstream_tls=upstream.trust,
    ) as running:
        yield running


def _client(ca: CertificateAuthority, front: Front) -> httpx.AsyncClient:
    return httpx.AsyncClient(proxy=f"http://127.0.0.1:{front.port}", verify=client_trusting(ca))


def test_the_stand_ins_fit_the_protocols(upstream: Upstream) -> None:
    policy: RequestPolicy = _policy()
    log: ConnectionLog = Log()
    connector: UpstreamConnector = LoopbackConnector(upstream.port)
    assert policy and log and connector


async def test_methods_and_paths_decide_each_request(
    ca: CertificateAuthority, upstream: Upstream, front: Front
) -> None:
    base = f"https://api.test:{upstream.port}"
    async with _client(ca, front) as client:
        fetched = await client.get(f"{base}/org/repo/info/refs?service=git-upload-pack")
        pushed = await client.post(f"{base}{PUSH}", content=b"pack")
        elsewhere = await client.post(f"{base}/org/other/git-receive-pack", content=b"pack")
        deleted = await client.delete(f"{base}/org/repo")

    assert fetched.status_code == 200 and pushed.status_code == 200
    assert fetched.json()["target"] == "/org/repo/info/refs?service=git-upload-pack"
    assert elsewhere.status_code == 403
    assert elsewhere.headers["x-proxy-error"] == f"api.test:POST:paths: POST only to {PUSH}"
    assert deleted.status_code == 403
    assert deleted.headers["x-proxy-error"].startswith("api.test:methods: DELETE is not allowed")
    assert [entry["target"] for entry in upstream.seen] == [
        "/org/repo/info/refs?service=git-upload-pack",
        PUSH,
    ]
    decisions = [entry for log in front.logs for entry in log.requests]
    assert ("POST", "/org/other/git-receive-pack", "refused", "api.test:POST:paths") in decisions
    assert ("GET", "/org/repo/info/refs", "allowed", "api.test:GET") in decisions


async def test_one_tunnel_carries_several_requests(
    ca: CertificateAuthority, upstream: Upstream, front: Front
) -> None:
    base = f"https://api.test:{upstream.port}"
    async with _client(ca, front) as client:
        for index in range(4):
            assert (await client.get(f"{base}/item/{index}")).status_code == 200
        assert (await client.post(f"{base}{PUSH}", content=b"x" * 3000)).status_code == 200

    assert len(front.connects) == 1
    assert len({entry["client_port"] for entry in upstream.seen}) == 1
    (log,) = front.logs
    assert [r[2] for r in log.requests] == ["allowed"] * 5
    assert log.up > 3000 and log.down > 0


async def test_a_chunked_upload_streams_through(
    ca: CertificateAuthority, upstream: Upstream, front: Front
) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for index in range(40):
            yield bytes([65 + index % 26]) * 10_000

    async with _client(ca, front) as client:
        sent = await client.post(f"https://api.test:{upstream.port}{PUSH}", content=pieces())

    echo = sent.json()
    assert echo["chunked"] is True and echo["body_size"] == 400_000
    assert echo["body_head"] == "A" * 64
    assert front.logs[0].up > 400_000


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_expect_continue_is_relayed_from_the_upstream(
    ca: CertificateAuthority, upstream: Upstream, front: Front, tmp_path: Path
) -> None:
    pack = tmp_path / "pack"
    pack.write_bytes(b"P" * 200_000)
    ca.certificate_pem()
    curl = await asyncio.create_subprocess_exec(
        "curl",
        "-sS",
        "-v",
        "--fail",
        "--proxy",
        f"http://127.0.0.1:{front.port}",
        "--cacert",
        str(ca.cert_path),
        "-H",
        "Expect: 100-continue",
        "--data-binary",
        f"@{pack}",
        f"https://api.test:{upstream.port}{PUSH}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    out, err = await curl.communicate()
    assert curl.returncode == 0, err.decode()
    assert b"HTTP/1.1 100 Continue" in err
    assert b'"body_size": 200000' in out


async def test_a_client_not_trusting_the_ca_reaches_nothing(
    upstream: Upstream, front: Front
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(f"CONNECT api.test:{upstream.port} HTTP/1.1\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    with pytest.raises(ssl.SSLCertVerificationError):
        await writer.start_tls(ssl.create_default_context(), server_hostname="api.test")
    writer.close()
    with contextlib.suppress(ssl.SSLError):
        await writer.wait_closed()
    assert upstream.seen == []


SECRET = "ghp_" + "Q7x2Lm9KpR4tW8zN1cV5bY3hJ6fD0sA2gE7u"
BINDINGS = [
    CredentialBinding(name="forge", secret=SECRET, hosts=("api.test",), inject_as="header"),
    CredentialBinding(name="git", secret="tok-" + "9" * 30, hosts=("api.test",), inject_as="basic"),
    CredentialBinding(
        name="search",
        secret="sk-live-" + "abcdEFGH1234" * 2,
        hosts=("*.test",),
        inject_as="query",
        field_name="key",
    ),
    CredentialBinding(
        name="custom",
        secret="k" * 24,
        hosts=("api.test",),
        inject_as="header",
        field_name="X-Api-Key",
    ),
]


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _requests_with_placeholders(host: str, port: int) -> list[httpx.Request]:
    forge, git, search, custom = (placeholder(binding) for binding in BINDINGS)
    return [
        httpx.Request(
            "GET", f"https://{host}:{port}/a", headers={"authorization": f"Bearer {forge}"}
        ),
        httpx.Request(
            "GET", f"https://{host}:{port}/b", headers={"authorization": _basic("x", git)}
        ),
        httpx.Request("GET", f"https://{host}:{port}/c?key={search}&q=1"),
        httpx.Request("GET", f"https://{host}:{port}/d", headers={"x-api-key": custom}),
    ]


@pytest.mark.parametrize("front", [BINDINGS], indirect=True)
async def test_credentials_are_swapped_only_for_bound_hosts(
    ca: CertificateAuthority, upstream: Upstream, front: Front
) -> None:
    forge, git, search, custom = (placeholder(binding) for binding in BINDINGS)
    async with _client(ca, front) as client:
        for request in _requests_with_placeholders("api.test", upstream.port):
            assert (await client.send(request)).status_code == 200
        for request in _requests_with_placeholders("other.test", upstream.port):
            assert (await client.send(request)).status_code == 200

    bound, unbound = upstream.seen[:4], upstream.seen[4:]
    assert bound[0]["authorization"] == f"Bearer {SECRET}"
    assert bound[1]["authorization"] == _basic("x", BINDINGS[1].secret)
    assert bound[2]["target"] == f"/c?key={BINDINGS[2].secret}&q=1"
    assert bound[3]["x-api-key"] == BINDINGS[3].secret
    # other.test is bound only by the wildcard query credential: the rest pass untouched.
    assert unbound[0]["authorization"] == f"Bearer {forge}"
    assert unbound[1]["authorization"] == _basic("x", git)
    assert unbound[2]["target"] == f"/c?key={BINDINGS[2].secret}&q=1"
    assert unbound[3]["x-api-key"] == custom
    leaked = str(unbound[:2] + unbound[3:])
    assert all(b.secret not in leaked for b in BINDINGS)
    assert search != BINDINGS[2].secret
