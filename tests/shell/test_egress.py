"""Network mode proxy (issue 35): sandboxed commands reach allowed domains only, through the
platform's egress proxy, and nothing else.

Real processes throughout: bubblewrap sandboxes, ``curl`` and ``git`` inside them, an HTTPS
server with its own certificate on loopback behind the name ``api.test``, which only the
tests' resolver mapping sends to loopback. Nothing but loopback is ever contacted.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

import corral
from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.hooks.config import HookHandler
from corral.runtime.timeline import TimelineRow
from corral.server import create_app
from corral.server.ui.render import templates
from corral.server.ui.sessions import COOKIE_NAME
from corral.server.ui.timeline import TimelineView
from corral.shell.egress.log import CallScope, EgressLog, EgressStore
from corral.shell.egress.policy import HostDecision, check_egress_setting, egress_policy_for
from corral.shell.egress.proxy import EgressProxy
from corral.shell.egress.upstream import UpstreamConnector, resolve
from corral.store.shell_tables import EgressConnection
from corral.web.fetch.addresses import AddressRules
from tests.conftest import FIXTURES
from tests.packages.core.conftest import server_python
from tests.shell.conftest import BWRAP, egress_hook_runner, shells
from tests.shell.test_interfaces import cli

pytestmark = pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")

UID = 65534


class Site:
    """An HTTPS (and a plain HTTP) server on loopback serving ``root``."""

    def __init__(self, root: Path, cert: Path, key: str) -> None:
        handler = partial(_Quiet, directory=str(root))
        self.tls = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), key)
        self.tls.socket = context.wrap_socket(self.tls.socket, server_side=True)
        self.plain = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.tls_port = self.tls.server_address[1]
        self.plain_port = self.plain.server_address[1]
        self._threads = [
            threading.Thread(target=s.serve_forever, daemon=True) for s in (self.tls, self.plain)
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        for server in (self.tls, self.plain):
            server.shutdown()
            server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def world() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="corral-egress-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def site(world: Path) -> Iterator[Site]:
    """``api.test`` over TLS with a self-signed certificate; a bare git repository in it."""
    served = world / "served"
    served.mkdir()
    (served / "hello.txt").write_text("hello from api.test\n")
    keys = world / "keys"
    keys.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=api.test", "-addext", "subjectAltName=DNS:api.test",
         "-keyout", str(keys / "key.pem"), "-out", str(keys / "cert.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    _bare_repository(world, served / "repo.git")
    server = Site(served, keys / "cert.pem", str(keys / "key.pem"))
    try:
        yield server
    finally:
        server.close()


def _bare_repository(world: Path, bare: Path) -> None:
    source = world / "src-repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    (source / "README").write_text("cloned through the proxy\n")
    subprocess.run([*git, "-C", str(source), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(source), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "update-server-info"], check=True)


class FakeNames:
    """The tests' resolver for names outside the mapping: one private answer, else the
    system's (``localhost`` from /etc/hosts: no DNS server is asked)."""

    async def __call__(self, host: str, port: int) -> Sequence[IPv4Address | IPv6Address]:
        if host == "intranet.test":
            return [ip_address("10.1.2.3")]
        if host == "localhost":
            return await resolve(host, port)
        raise OSError(f"no such name {host}")


@pytest.fixture
async def sandboxed(world: Path, site: Site) -> AsyncIterator[tuple[Platform, Path]]:
    data = _folder(world, "data-", 0o755)
    async with corral.open(data, sandbox="bubblewrap") as platform:
        service = shells(platform)
        assert service.status.tier == "bubblewrap", service.status.to_json()
        service.enable_egress(
            UpstreamConnector.unsafe_mapping(
                {"api.test": "127.0.0.1"}, judge=AddressRules().refusal, resolver=FakeNames()
            )
        )
        work = _work(world)
        await platform.admin.add_source("work", str(work))
        await platform.admin.grant_source(
            "work", principal_kind="role", principal="owner", rights="rwx"
        )
        ports = [site.tls_port, site.plain_port]
        await platform.admin.set_live(
            "egress",
            {
                "allowed_domains": [
                    {"domain": "api.test", "ports": ports},
                    {"domain": "localhost", "ports": ports},
                    {"domain": "intranet.test", "ports": ports},
                    {"domain": "*.allowed.test", "ports": ports},
                ],
                "denied_domains": ["bad.allowed.test"],
            },
        )
        yield platform, work


def _folder(world: Path, prefix: str, mode: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=world))
    folder.chmod(mode)
    return folder


def _work(world: Path) -> Path:
    """The command's source, owned by the sandbox uid, with the test CA in it."""
    work = _folder(world, "work-", 0o777)
    if os.geteuid() == 0:
        os.chown(work, UID, UID)
    shutil.copy(world / "keys" / "cert.pem", work / "ca.pem")
    (work / "ca.pem").chmod(0o644)
    return work


async def _run(platform: Platform, command: str) -> Any:
    return await platform.call_tool("execute", {"command": command, "cwd": "work://"})


async def test_curl_reaches_an_allowed_name_through_the_tunnel(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    result = await _run(
        platform, f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    )
    assert "hello from api.test" in result.text, result.text
    assert result.data["network"] == "proxy (egress policy)"
    assert result.data["egress"]["allowed"] == 1
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.protocol, r.allowed) for r in rows] == [("api.test", "connect", True)]
    assert rows[0].bytes_up > 0 and rows[0].bytes_down > 0


async def test_plain_http_and_socks5_go_through_the_proxy(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    plain = await _run(platform, f"curl -sS http://api.test:{site.plain_port}/hello.txt")
    assert "hello from api.test" in plain.text, plain.text
    socks = await _run(
        platform,
        f"curl -sS --cacert ca.pem --proxy socks5h://127.0.0.1:3128 "
        f"https://api.test:{site.tls_port}/hello.txt",
    )
    assert "hello from api.test" in socks.text, socks.text
    assert socks.data["egress"]["allowed"] == 1
    raw = await _run(
        platform,
        f"curl -sS --proxy socks5h://127.0.0.1:3128 https://127.0.0.1:{site.tls_port}/",
    )
    assert [r["rule"] for r in raw.data["egress"]["refused_connections"]] == ["raw_ip"]
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert {r.protocol for r in rows} == {"http", "socks5"}
    assert all(r.call_id for r in rows)


async def test_refused_connections_say_why(sandboxed: tuple[Platform, Path], site: Site) -> None:
    platform, _ = sandboxed
    port = site.tls_port
    targets = {
        "denied": (f"https://bad.allowed.test:{port}/", "denied_domains: bad.allowed.test"),
        "unlisted": (f"https://elsewhere.test:{port}/", "unmatched"),
        "raw_ip": (f"https://127.0.0.1:{port}/", "raw_ip"),
        "private": (f"https://intranet.test:{port}/", "blocked_address"),
        "loopback": (f"https://localhost:{port}/", "blocked_address"),
    }
    script = "; ".join(
        f"echo {name}; curl -sS -o /dev/null -w '%{{http_code}}\\n' --cacert ca.pem {url} 2>&1"
        for name, (url, _) in targets.items()
    )
    result = await _run(platform, script)
    refused = {(r["host"], r["rule"]) for r in result.data["egress"]["refused_connections"]}
    assert refused == {
        ("bad.allowed.test", "denied_domains: bad.allowed.test"),
        ("elsewhere.test", "unmatched"),
        ("127.0.0.1", "raw_ip"),
        ("intranet.test", "blocked_address"),
        ("localhost", "blocked_address"),
    }, result.text
    assert result.data["egress"]["allowed"] == 0
    assert "The egress proxy refused 5 connection(s)" in result.text
    assert "10.1.2.3, which is private" in result.text
    assert "127.0.0.1, which is loopback" in result.text
    # curl sees the refusal as the proxy's 403 to CONNECT.
    assert "CONNECT tunnel failed, response 403" in result.text
    headers = await _run(
        platform, f"curl -sS -i -p --proxy http://127.0.0.1:3128 https://elsewhere.test:{port}/"
    )
    assert "x-proxy-error: blocked-by-allowlist" in headers.text, headers.text
    assert "x-proxy-reason: elsewhere.test matches no allowed domain" in headers.text


async def test_git_clone_over_https_through_the_proxy(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, work = sandboxed
    result = await _run(
        platform,
        f"GIT_SSL_CAINFO=$PWD/ca.pem git clone -q https://api.test:{site.tls_port}/repo.git "
        "cloned && cat cloned/README",
    )
    assert "cloned through the proxy" in result.text, result.text
    assert (work / "cloned" / "README").exists()


_ESCAPES = """\
import os, socket, subprocess, sys
PORT = int(sys.argv[1])
def attempt(name, call):
    try:
        call()
    except Exception as exc:
        print(f"{name}: blocked ({type(exc).__name__})")
    else:
        print(f"{name}: ESCAPED")
def tcp(host, port):
    def go():
        socket.create_connection((host, port), timeout=3).close()
    return go
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(b"x", ("192.0.2.1", 53))
    s.recv(10)
def dns():
    socket.getaddrinfo("api.test", 443)
def unix():
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect("/run/corral.sock")
def noproxy():
    done = subprocess.run(["curl", "-sS", "--noproxy", "*", "--cacert", "ca.pem",
                           f"https://api.test:{PORT}/hello.txt"], capture_output=True)
    if done.returncode != 0:
        raise OSError(done.stderr.decode().strip())
def inherited():
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if socket.socket(fileno=int(fd)).family == socket.AF_UNIX:
                found.append(fd)
        except OSError:
            pass
    if found:
        raise SystemExit(f"inherited unix sockets {found}")
    raise OSError("no descriptor leads to the platform")
def proxy_admin():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=3)
    s.sendall(b"GET /admin HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
    if b" 200 " in s.recv(200):
        return
    raise OSError("no admin side")
attempt("direct tcp to the host server", tcp("127.0.0.1", PORT))
attempt("direct tcp ipv6 loopback", tcp("::1", PORT))
attempt("direct tcp to a public address", tcp("192.0.2.1", 443))
attempt("udp", udp)
attempt("dns", dns)
attempt("unix socket", unix)
attempt("curl --noproxy", noproxy)
attempt("inherited descriptor", inherited)
attempt("proxy admin side", proxy_admin)
"""


async def test_escapes_from_inside_the_sandbox_all_fail(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, work = sandboxed
    (work / "escape.py").write_text(_ESCAPES)
    result = await _run(platform, f"python3 escape.py {site.tls_port}")
    lines = [line for line in result.text.splitlines() if ": " in line and "blocked" in line]
    assert "ESCAPED" not in result.text, result.text
    assert len(lines) == 9, result.text


async def test_without_allowed_domains_the_network_stays_off(
    sandboxed: tuple[Platform, Path],
) -> None:
    platform, _ = sandboxed
    await platform.admin.set_live("egress", {})
    result = await _run(platform, "echo ${HTTPS_PROXY:-none}")
    assert result.data["network"] == "off"
    assert "none" in result.text


async def test_a_bad_policy_is_refused_with_the_reason(sandboxed: tuple[Platform, Path]) -> None:
    platform, _ = sandboxed
    with pytest.raises(UsageError, match="not a domain"):
        await platform.admin.set_live("egress", {"allowed_domains": ["exa mple.com"]})
    with pytest.raises(UsageError, match="unmatched"):
        await platform.admin.set_live("egress", {"unmatched": "maybe"})


def test_policy_matching() -> None:
    policy = egress_policy_for(
        {
            "allowed_domains": [
                "*.example.com",
                {"domain": "github.com", "methods": ["GET"]},
                {"domain": "github.com", "methods": ["POST"], "paths": ["/acme/*/git-*-pack"]},
            ],
            "denied_domains": ["evil.example.com"],
            "agents": {"locked": {"allowed_domains": []}},
        }
    )
    assert policy.decide_host("a.b.example.com", 443).allowed
    assert not policy.decide_host("example.com", 443).allowed  # the wildcard wants a label
    assert policy.decide_host("EVIL.example.com.", 443).rule == "denied_domains: evil.example.com"
    assert not policy.decide_host("a.example.com", 22).allowed
    assert policy.decide_host("github.com", 443).intercept
    assert not policy.decide_host("a.example.com", 443).intercept
    assert policy.decide_request("github.com", "GET", "/anything?x=1").allowed
    assert policy.decide_request("github.com", "POST", "/acme/app/git-receive-pack").allowed
    assert not policy.decide_request("github.com", "POST", "/other/app/git-receive-pack").allowed
    assert not policy.decide_request("github.com", "DELETE", "/acme/app").allowed
    locked = egress_policy_for(
        {"agents": {"locked": {}}, "allowed_domains": ["a.io"]}, agent="locked"
    )
    assert not locked.permits_anything
    with pytest.raises(UsageError, match="too broad"):
        check_egress_setting({"allowed_domains": ["*.com"]})
    with pytest.raises(UsageError, match="unknown keys"):
        check_egress_setting({"agents": {"x": {"allowed_private_hosts": []}}})


async def test_the_loopback_stand_in_is_only_reachable_through_the_mapping() -> None:
    plain = UpstreamConnector(judge=AddressRules().refusal, resolver=FakeNames())
    policy = egress_policy_for({"allowed_domains": ["localhost"]})
    with pytest.raises(Exception, match="loopback"):
        await plain.open("localhost", 443, policy)
    trusting = egress_policy_for(
        {"allowed_domains": ["localhost"], "allowed_private_hosts": ["localhost"]}
    )
    assert [str(a) for a in await plain.addresses("localhost", 443, trusting)][:1] in (
        ["127.0.0.1"],
        ["::1"],
    )
    await asyncio.sleep(0)


async def test_corral_egress_log_prints_a_conversations_connections(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    conversation = await platform.runtime.start_conversation()
    await platform.call_tool(
        "execute",
        {"command": f"curl -sS -o /dev/null https://nope.test:{site.tls_port}/", "cwd": "work://"},
        conversation_id=conversation.id,
    )
    code, out, err = await cli(platform.kernel.settings.data_dir, "egress", "log", conversation.id)
    assert code == 0, err
    assert "refused" in out and "nope.test" in out and "unmatched" in out
    code, out, _ = await cli(platform.kernel.settings.data_dir, "egress", "log", "c_none")
    assert code != 0


async def test_a_background_shell_goes_through_the_proxy_for_its_lifetime(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    started = await platform.call_tool(
        "execute",
        {
            "command": f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt; "
            f"curl -sS https://gone.test:{site.tls_port}/",
            "cwd": "work://",
            "background": True,
        },
    )
    assert started.data is not None, started.text
    record = await shells(platform).background.wait_ended(started.data["shell_id"], 30)
    assert record.status == "exited"
    await shells(platform).settle_egress()
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.allowed) for r in rows] == [("api.test", True), ("gone.test", False)]
    assert rows[0].bytes_down > 0


async def test_method_rules_apply_to_plain_http_and_need_interception_for_https(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    ports = [site.tls_port, site.plain_port]
    await platform.admin.set_live(
        "egress",
        {"allowed_domains": [{"domain": "api.test", "methods": ["GET"], "ports": ports}]},
    )
    url = f"http://api.test:{site.plain_port}/hello.txt"
    got = await _run(platform, f"curl -sS {url}")
    assert "hello from api.test" in got.text, got.text
    posted = await _run(platform, f"curl -sS -i -X POST -d x {url}")
    assert "x-proxy-error: blocked-by-policy" in posted.text, posted.text
    assert "POST /hello.txt on api.test is not allowed" in posted.text
    tunnelled = await _run(
        platform, f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    )
    if shells(platform).egress_interceptor is None:
        refused = tunnelled.data["egress"]["refused_connections"]
        assert [r["rule"] for r in refused] == ["intercept_unavailable"], tunnelled.text


async def test_unmatched_ask_is_refused_with_what_to_do(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    await platform.admin.set_live("egress", {"unmatched": "ask"})
    result = await _run(platform, f"curl -sS https://new.test:{site.tls_port}/")
    assert result.data["network"] == "proxy (egress policy)"
    (refused,) = result.data["egress"]["refused_connections"]
    assert refused["rule"] == "unmatched (ask)"
    assert "egress.allowed_domains" in refused["reason"]


async def test_a_second_request_on_a_plain_http_connection_does_not_ride_along() -> None:
    """Only the judged request's own body goes up; a pipelined POST stays behind."""
    received: list[bytes] = []
    done = asyncio.Event()

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        writer.write_eof()
        received.append(head + await reader.read())  # all the proxy sends, until it closes
        writer.close()
        done.set()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = EgressProxy(
        policy=egress_policy_for(
            {"allowed_domains": [{"domain": "api.test", "methods": ["GET"], "ports": [port]}]}
        ),
        upstream=UpstreamConnector.unsafe_mapping(
            {"api.test": "127.0.0.1"}, judge=AddressRules().refusal
        ),
        log=EgressLog(CallScope()),
    )
    listener = socket.create_server(("127.0.0.1", 0))
    await proxy.serve(listener)
    reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
    target = f"http://api.test:{port}/x"
    writer.write(
        f"GET {target} HTTP/1.1\r\nHost: api.test\r\n\r\n"
        f"POST {target} HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\n\r\nbody".encode()
    )
    answer = await reader.read()
    writer.close()
    await asyncio.wait_for(done.wait(), 10)
    await proxy.close()
    server.close()
    assert answer.endswith(b"ok")
    assert len(received) == 1 and received[0].startswith(b"GET /x HTTP/1.1")
    assert b"POST" not in received[0], received[0]


async def test_the_card_lists_refusals_and_the_egress_tab_shows_the_log(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    conversation = await platform.runtime.start_conversation()
    command = (
        f"curl -sS -o /dev/null --cacert ca.pem https://api.test:{site.tls_port}/hello.txt; "
        f"curl -sS -o /dev/null https://nope.test:{site.tls_port}/"
    )
    result = await platform.call_tool(
        "execute", {"command": command, "cwd": "work://"}, conversation_id=conversation.id
    )
    view = TimelineView.of(
        [
            TimelineRow(seq=1, kind="tool_call", call_id="c1",
                        data={"tool": "execute", "args": {"command": command}}),
            TimelineRow(seq=2, kind="tool_result", call_id="c1", data={
                "tool": "execute",
                "result": {"content": [{"type": "text", "text": result.text}],
                           "data": result.data},
            }),
        ]
    )  # fmt: skip
    card = templates.get_template("_entry.html").render(
        entry=view.entries[0], who=None, conversation_id=conversation.id
    )
    assert "egress: 1 allowed · 1 refused" in card, card
    assert f"<code>nope.test:{site.tls_port}</code> refused (unmatched)" in card
    assert f'href="/ui/c/{conversation.id}/egress"' in card

    app = create_app(platform)
    owner = (await platform.caller()).user_id
    cookie = await app.state.ui.sessions.begin(owner)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://corral.test",
        cookies={COOKIE_NAME: cookie},
    ) as client:
        page = await client.get(f"/ui/c/{conversation.id}/egress")
        missing = await client.get("/ui/c/c_none/egress")
    assert page.status_code == 200, page.text
    rows = re.findall(r'<tr class="egress-(\w+)">\s*<td>[^<]*</td>\s*<td>\w+</td>\s*'
                      r"<td><code>([^<]+)</code>", page.text)  # fmt: skip
    assert rows == [
        ("allowed", f"api.test:{site.tls_port}"),
        ("refused", f"nope.test:{site.tls_port}"),
    ]
    assert "matches no allowed domain" in page.text
    assert missing.status_code == 404


async def test_command_hooks_run_under_the_egress_policy(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, work = sandboxed
    service = shells(platform)

    runner = egress_hook_runner(platform, work, UID)
    through = HookHandler(
        kind="command",
        command=f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt",
    )
    got = await runner.run(through, b"{}")
    assert "hello from api.test" in got.stdout, got
    refused = HookHandler(
        kind="command", command=f"curl -sS -o /dev/null https://nope.test:{site.tls_port}/"
    )
    assert (await runner.run(refused, b"{}")).exit_code != 0
    hook = {"type": "command", "command": through.command.replace("ca.pem", f"{work}/ca.pem")}
    await platform.admin.set_live("hooks", {"hooks": {"SessionStart": [{"hooks": [hook]}]}})
    conversation = await platform.runtime.start_conversation()
    payload = {"source": "startup", "session_id": conversation.id}
    outcome = await platform.hooks.run("SessionStart", payload)
    assert any("hello from api.test" in c for c in outcome.additional_context), outcome
    logged = await service.egress_store.for_conversation(conversation.id)
    assert [(c.host, c.allowed) for c in logged] == [("api.test", True)]
    direct = HookHandler(
        kind="command",
        command=f"curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{site.plain_port}/hello.txt",
    )
    blocked = await runner.run(direct, b"{}")
    assert blocked.exit_code != 0 and "hello" not in blocked.stdout, blocked
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    hosts = [(r.host, r.allowed) for r in rows]
    assert hosts == [("api.test", True), ("nope.test", False), ("api.test", True)]

    await platform.admin.set_live("egress", {})
    off = HookHandler(
        kind="command",
        command=f"curl -sS --max-time 5 http://api.test:{site.plain_port}/; "
        "echo ${HTTPS_PROXY:-none}",
    )
    alone = await runner.run(off, b"{}")
    assert "none" in alone.stdout and "hello" not in alone.stdout, alone
    await platform.admin.set_live("shell_network", True)
    assert await service.helper_network() is None  # the host's network, as shell calls have


async def test_stdio_mcp_servers_run_under_the_egress_policy(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, work = sandboxed
    command = [server_python(), str(FIXTURES / "mcp_egress_server.py")]
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "out", "command": command}]}
    )
    assert not added.is_error, added.text
    url = f"https://api.test:{site.tls_port}/hello.txt"
    fetched = await platform.call_tool("out_fetch", {"url": url, "cafile": f"{work}/ca.pem"})
    assert "hello from api.test" in fetched.text, fetched.text
    other = await platform.call_tool("out_fetch", {"url": f"https://nope.test:{site.tls_port}/"})
    assert "failed" in other.text and "403" in other.text, other.text
    dialled = await platform.call_tool("out_dial", {"host": "127.0.0.1", "port": site.plain_port})
    assert dialled.text.startswith("blocked"), dialled.text
    await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "out"}]})
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.allowed) for r in rows] == [("api.test", True), ("nope.test", False)]


async def test_a_long_lived_mcp_servers_connections_are_logged_while_it_runs(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, work = sandboxed
    data = platform.kernel.settings.data_dir
    command = [server_python(), str(FIXTURES / "mcp_egress_server.py")]
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "out", "command": command}]}
    )
    assert not added.is_error, added.text
    url = f"https://api.test:{site.tls_port}/hello.txt"
    fetched = await platform.call_tool("out_fetch", {"url": url, "cafile": f"{work}/ca.pem"})
    assert "hello from api.test" in fetched.text, fetched.text
    async with asyncio.timeout(60):
        while True:  # stored in batches (about every second) while the server lives on
            code, out, err = await cli(data, "egress", "log")
            assert code == 0, err
            if "api.test" in out:
                break
    assert "api.test" in out and "allowed" in out, out
    other = await platform.call_tool("out_fetch", {"url": f"https://nope.test:{site.tls_port}/"})
    assert "403" in other.text, other.text
    await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "out"}]})
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    # Each connection once, with its final counts, however many batches stored it.
    assert [(r.host, r.allowed) for r in rows] == [("api.test", True), ("nope.test", False)]
    assert rows[0].bytes_down > 0 and rows[0].duration_s > 0


async def test_syncing_a_helpers_log_keeps_every_connection_past_the_memory_limit(
    sandboxed: tuple[Platform, Path],
) -> None:
    platform, _ = sandboxed
    store = EgressStore(platform.kernel.sessions)
    log = EgressLog(CallScope(agent="helper"), limit=2)
    allowed = HostDecision(allowed=True, rule="allowed_domains: a.test", reason="allowed")
    for number in range(5):
        record = log.open("connect", f"h{number}.test", 443, allowed)
        record.bytes_down = 10
        await store.sync(log)  # stored while open
        record.bytes_down = 20
        record.close()
        await store.sync(log)  # updated, then let go of
    assert log.records == [] and log.dropped == 0
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.bytes_down) for r in rows] == [(f"h{n}.test", 20) for n in range(5)]


async def test_a_permission_profiles_section_applies_to_its_calls(
    sandboxed: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = sandboxed
    allowed = {"allowed_domains": [{"domain": "api.test", "ports": [site.tls_port]}]}
    curl = f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    await platform.admin.set_live("egress", {"profiles": {"auto": allowed}})
    through = await _run(platform, curl)  # call_tool's profile is auto
    assert "hello from api.test" in through.text, through.text
    await platform.admin.set_live("egress", {"profiles": {"balanced": allowed}})
    other = await _run(platform, curl)
    assert other.data["network"] == "off" and "hello" not in other.text


async def test_a_workflows_section_applies_to_the_calls_of_its_runs(
    sandboxed: tuple[Platform, Path], site: Site, tmp_path: Path
) -> None:
    platform, _ = sandboxed
    allowed = {"allowed_domains": [{"domain": "api.test", "ports": [site.tls_port]}]}
    curl = f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    script = tmp_path / "model.json"
    turns = [{"tool_calls": [{"name": "execute", "args": {"command": curl, "cwd": "work://"}}]}]
    script.write_text(json.dumps({"turns": [*turns, {"text": "Done."}]}))
    owner = await platform.caller()
    workflow = await platform.workflows.set(
        {"title": "Fetcher", "instruction": "Fetch.", "model": f"script:{script}"}, owner
    )
    for key in (workflow.id, "Fetcher"):  # a section is keyed by the workflow's id or title
        await platform.admin.set_live("egress", {"workflows": {key: allowed}})
        run = await platform.workflows.run(workflow.id, owner)
        parked = await platform.runtime.wait_run(run.id)  # its profile asks before execute
        assert parked.status == "parked", parked
        (approval,) = await platform.pending_approvals()
        await platform.decide_approval(approval.id, "approve")
        ended = await platform.runtime.wait_run(run.id)
        assert ended.status == "finished", ended
        rows = await platform.rows(run.conversation_id)
        (result,) = [r.data["result"] for r in rows if r.kind == "tool_result"]
        text = "\n".join(str(block.get("text", "")) for block in result["content"])
        assert "hello from api.test" in text, text
        assert result["data"]["network"] == "proxy (egress policy)", result["data"]
        outside = await _run(platform, curl)  # the same command, not in the workflow's run
        assert outside.data["network"] == "off" and "hello" not in outside.text, outside.text
