"""Loopback parts for the TLS interception tests: an HTTPS upstream with its own CA, a
minimal CONNECT front that hands tunnels to :func:`intercept`, and stand-ins of the proxy's
policy, connector and connection log (the proxy engineer's real ones share their shape).

Every name the tests use (``api.test``, ``other.test``) is mapped to 127.0.0.1 by the
connector: nothing here reaches anything but loopback.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.credentials import CredentialBinding
from corral.shell.egress.intercept import intercept


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    rule: str | None = None
    reason: str | None = None
    intercept: bool = True


@dataclass(slots=True)
class RulePolicy:
    """``allow[(host, method)]`` is None for any path, else the one path allowed."""

    allow: dict[tuple[str, str], str | None]

    def decide_request(self, host: str, method: str, path: str) -> Decision:
        key = (host, method)
        if key not in self.allow:
            return Decision(False, f"{host}:methods", f"{method} is not allowed on {host}")
        only = self.allow[key]
        if only is not None and path != only:
            return Decision(False, f"{host}:{method}:paths", f"{method} only to {only}")
        return Decision(True, f"{host}:{method}")


@dataclass(slots=True)
class Log:
    requests: list[tuple[str, str, str, str]] = field(default_factory=list)
    up: int = 0
    down: int = 0

    def request(self, method: str, path: str, decision: str, rule: str) -> None:
        self.requests.append((method, path, decision, rule))

    def bytes(self, up: int, down: int) -> None:
        self.up += up
        self.down += down


@dataclass(slots=True)
class LoopbackConnector:
    """Every host to the upstream's loopback port (the proxy's resolver does this in tests)."""

    port: int
    opened: int = 0

    async def open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.opened += 1
        return await asyncio.open_connection("127.0.0.1", self.port)


# -- the upstream: Python's own HTTP server behind TLS, echoing what it received ------------


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]]

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length", "0")))

    def _reply(self) -> None:
        body = self._body()
        entry = {
            "method": self.command,
            "target": self.path,
            "host": self.headers.get("host"),
            "authorization": self.headers.get("authorization"),
            "x-api-key": self.headers.get("x-api-key"),
            "chunked": self.headers.get("transfer-encoding", "").lower() == "chunked",
            "body_size": len(body),
            "body_head": body[:64].decode("latin-1"),
            "client_port": self.client_address[1],
        }
        self.seen.append(entry)
        out = json.dumps(entry).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = _reply

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass(slots=True)
class Upstream:
    port: int
    seen: list[dict[str, Any]]
    trust: ssl.SSLContext
    """What the intercepting proxy verifies the upstream with (instead of the system store)."""


@contextmanager
def https_upstream(folder: Path) -> Iterator[Upstream]:
    """An HTTPS server with its own CA, answering for any name it is asked by SNI."""
    own_ca = CertificateAuthority(folder / "upstream-private")
    context = own_ca.server_context("api.test")

    def choose(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
        sock.context = own_ca.server_context(name or "api.test")

    context.sni_callback = choose
    seen: list[dict[str, Any]] = []
    handler = type("Echo", (_Echo,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    trust = ssl.create_default_context(cadata=own_ca.certificate_pem().decode("ascii"))
    trust.set_alpn_protocols(["http/1.1"])
    try:
        yield Upstream(server.server_address[1], seen, trust)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the CONNECT front ----------------------------------------------------------------------


@dataclass(slots=True)
class Front:
    port: int
    connects: list[tuple[str, int]]
    logs: list[Log]


@asynccontextmanager
async def connect_front(
    *,
    ca: CertificateAuthority,
    policy: RulePolicy,
    credentials: list[CredentialBinding],
    connector: LoopbackConnector,
    upstream_tls: ssl.SSLContext,
) -> AsyncIterator[Front]:
    """A CONNECT-only proxy on loopback that intercepts every tunnel it opens."""
    connects: list[tuple[str, int]] = []
    logs: list[Log] = []

    handlers: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await _serve(reader, writer)
        finally:
            handlers.discard(task)
            writer.close()

    async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, authority, _ = head.split(b"\r\n", 1)[0].decode().split(" ")
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            writer.close()
            return
        host, _, port = authority.rpartition(":")
        connects.append((host, int(port)))
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        log = Log()
        logs.append(log)
        await intercept(
            reader,
            writer,
            host,
            int(port),
            policy,
            credentials,
            connector,
            log,
            ca=ca,
            upstream_tls=upstream_tls,
        )

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield Front(server.sockets[0].getsockname()[1], connects, logs)
    finally:
        server.close()
        # A client's last connection may still be ending: let its handler close it, so no
        # transport outlives the test's loop.
        if handlers:
            await asyncio.wait(list(handlers), timeout=5.0)
        await server.wait_closed()


def client_trusting(ca: CertificateAuthority) -> ssl.SSLContext:
    """A client context that trusts the installation CA (as a sandbox's bundle makes it)."""
    return ssl.create_default_context(cadata=ca.certificate_pem().decode("ascii"))
