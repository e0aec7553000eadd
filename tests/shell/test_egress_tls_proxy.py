"""The egress proxy with TLS interception plugged in (issue 35): real ``curl`` and ``git``
processes through the real proxy to an HTTPS server with its own certificate on loopback,
behind names only the tests' connector maps to 127.0.0.1 (``unsafe_mapping``).

A domain with method/path rules is terminated and judged per request (a clone works, a push
to a path the rules do not allow is refused); a credential bound to a host is swapped in
there only, while the same placeholder sent to another host goes out as it is.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.credentials import CredentialBinding, placeholder
from corral.shell.egress.log import CallScope, EgressLog
from corral.shell.egress.policy import egress_policy_for
from corral.shell.egress.proxy import EgressProxy
from corral.shell.egress.tls import TlsInterceptor
from corral.shell.egress.upstream import UpstreamConnector
from corral.web.fetch.addresses import AddressRules

pytestmark = pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("git") is None, reason="needs curl and git"
)

SECRET = "ghp_" + "Z4m8Qw2Er6Ty0Ui3Op7As1Df5Gh9Jk2Lz6Xc"
FORGE = CredentialBinding(name="forge", secret=SECRET, hosts=("api.test",), inject_as="header")
GIT_TOKEN = "tok-" + "Pq7Rs8Tu9Vw0Xy1Za2Bc3De4"
GIT = CredentialBinding(name="git", secret=GIT_TOKEN, hosts=("api.test",), inject_as="basic")


class _Handler(BaseHTTPRequestHandler):
    """``/git/…`` runs git's smart HTTP backend; anything else echoes its Authorization."""

    protocol_version = "HTTP/1.1"
    root: str
    seen: list[dict[str, str]]

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        self.seen.append(
            {"method": self.command, "path": self.path, "auth": self.headers["authorization"] or ""}
        )
        if self.path.startswith("/auth/"):
            # A forge that wants the token as basic auth's password, as git sends it.
            wanted = "Basic " + base64.b64encode(f"x-access-token:{GIT_TOKEN}".encode()).decode()
            if self.headers["authorization"] != wanted:
                self._answer(401, {"www-authenticate": 'Basic realm="git"'}, b"")
                return
            self.path = self.path[len("/auth") :]
        if self.path.startswith("/git/"):
            self._git(body)
            return
        out = (self.headers["authorization"] or "none").encode()
        self._answer(200, {"content-type": "text/plain"}, out)

    def _git(self, body: bytes) -> None:
        path, _, query = self.path[len("/git") :].partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "tester",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("content-encoding", ""),
            "GIT_PROTOCOL": self.headers.get("git-protocol", ""),
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, out = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value.strip()
        self._answer(status, headers, out)

    def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass(slots=True)
class Site:
    port: int
    seen: list[dict[str, str]]
    trust: ssl.SSLContext
    ca_pem: bytes


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    repos = tmp_path / "repos"
    _bare_repository(tmp_path, repos / "repo.git")
    own_ca = CertificateAuthority(tmp_path / "site-private")
    context = own_ca.server_context("api.test")

    def choose(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
        sock.context = own_ca.server_context(name or "api.test")

    context.sni_callback = choose
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Handler,), {"root": str(repos), "seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    trust = ssl.create_default_context(cadata=own_ca.certificate_pem().decode("ascii"))
    try:
        yield Site(server.server_address[1], seen, trust, own_ca.certificate_pem())
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _bare_repository(folder: Path, bare: Path) -> None:
    source = folder / "source"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    (source / "README").write_text("cloned through the intercepting proxy\n")
    subprocess.run([*git, "-C", str(source), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(source), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "config", "http.receivepack", "true"], check=True)


@dataclass(slots=True)
class Running:
    proxy: EgressProxy
    url: str
    env: dict[str, str]


@pytest.fixture
async def proxy(tmp_path: Path, site: Site) -> AsyncIterator[Running]:
    ca = CertificateAuthority(tmp_path / "private")
    policy = egress_policy_for(
        {
            "allowed_domains": [
                {"domain": "api.test", "methods": ["GET"], "ports": [site.port]},
                {
                    "domain": "api.test",
                    "methods": ["POST"],
                    "paths": ["/git/*/git-upload-pack", "/auth/git/*/git-upload-pack"],
                    "ports": [site.port],
                },
                {"domain": "other.test", "ports": [site.port]},
            ]
        }
    )
    running = EgressProxy(
        policy=dataclasses.replace(policy, credential_hosts=frozenset(FORGE.hosts)),
        upstream=UpstreamConnector.unsafe_mapping(
            {"api.test": "127.0.0.1", "other.test": "127.0.0.1"}, judge=AddressRules().refusal
        ),
        log=EgressLog(CallScope()),
        interceptor=TlsInterceptor(ca, upstream_tls=site.trust),
        credentials=[FORGE, GIT],
    )
    listener = socket.create_server(("127.0.0.1", 0))
    await running.serve(listener)
    # The clients trust the installation CA (intercepted hosts) and the site's own (tunnelled).
    bundle = tmp_path / "trust.pem"
    bundle.write_bytes(ca.certificate_pem() + site.ca_pem)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HTTPS_PROXY": url,
        "GIT_SSL_CAINFO": str(bundle),
        "CURL_CA_BUNDLE": str(bundle),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    try:
        yield Running(running, url, env)
    finally:
        await running.close()


async def _run(env: dict[str, str], *argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_clone_works_and_a_push_the_rules_do_not_allow_is_refused(
    tmp_path: Path, site: Site, proxy: Running
) -> None:
    remote = f"https://api.test:{site.port}/git/repo.git"
    code, _, err = await _run(proxy.env, "git", "clone", "-q", remote, str(tmp_path / "clone"))
    assert code == 0, err
    assert (tmp_path / "clone" / "README").read_text() == "cloned through the intercepting proxy\n"

    clone = tmp_path / "clone"
    (clone / "more").write_text("more\n")
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    await _run(proxy.env, *git, "add", "more")
    await _run(proxy.env, *git, "commit", "-qm", "two")
    code, _, err = await _run(proxy.env, *git, "push", "-q", "origin", "HEAD")
    assert code != 0
    assert "403" in err, err
    assert not [s for s in site.seen if "receive-pack" in s["path"] and s["method"] == "POST"]
    refused = proxy.proxy.log.refused()
    assert [r["request"] for r in refused] == ["POST /git/repo.git/git-receive-pack"], refused
    assert "not allowed by the rules" in refused[0]["reason"]


async def test_the_secret_goes_to_the_bound_host_only(site: Site, proxy: Running) -> None:
    stand_in = placeholder(FORGE)
    assert stand_in != SECRET and len(stand_in) == len(SECRET) and stand_in[:4] == "ghp_"
    header = f"Authorization: Bearer {stand_in}"
    code, bound, err = await _run(
        proxy.env, "curl", "-sS", "-H", header, f"https://api.test:{site.port}/whoami"
    )
    assert code == 0, err
    assert bound == f"Bearer {SECRET}"
    code, unbound, err = await _run(
        proxy.env, "curl", "-sS", "-H", header, f"https://other.test:{site.port}/whoami"
    )
    assert code == 0, err
    assert unbound == f"Bearer {stand_in}"
    assert [s["auth"] for s in site.seen] == [f"Bearer {SECRET}", f"Bearer {stand_in}"]
    protocols = [(r.host, r.allowed) for r in proxy.proxy.log.records]
    assert protocols == [("api.test", True), ("other.test", True)]


async def test_git_sends_the_placeholder_and_the_forge_gets_the_token(
    tmp_path: Path, site: Site, proxy: Running
) -> None:
    stand_in = placeholder(GIT)
    assert stand_in != GIT_TOKEN and stand_in.startswith("tok-")
    # The credential helper a connected remote gets, answering with the placeholder.
    helper = f"!f() {{ echo username=x-access-token; echo password={stand_in}; }}; f"
    remote = f"https://api.test:{site.port}/auth/git/repo.git"
    code, _, err = await _run(
        proxy.env, "git", "-c", f"credential.helper={helper}", "clone", "-q", remote,
        str(tmp_path / "private-clone"),
    )  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "private-clone" / "README").exists()
    sent = [s["auth"] for s in site.seen]
    assert sent[0] == "" and all(GIT_TOKEN in base64.b64decode(a[6:]).decode() for a in sent[1:])
    assert len(sent) > 1
