"""Real HTTP(S) servers on loopback addresses, run in threads, for the fetch tests.

Nothing here is a mock: the fetch pipeline opens real sockets to these servers. Tests can
only reach them through ``AddressRules.unsafe_allowing(...)`` (see :func:`allowing`).
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address, ip_network
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from corral.web.fetch import AddressRules, Fetcher, FetchPolicy, Resolver

Responder = Callable[["Handler"], None]


@dataclass
class Seen:
    """One request a server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    local_address: str


class Handler(BaseHTTPRequestHandler):
    """Dispatches to the server's routes and records every request."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        seen = Seen(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            local_address=self.connection.getsockname()[0],
        )
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(seen)
        responder = owner.routes.get(path)
        if responder is None:
            self.reply(404, b"not found", content_type="text/plain")
            return
        responder(self)

    do_GET = do_POST = do_HEAD = do_PUT = _dispatch

    def reply(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        content_length: bool = True,
    ) -> None:
        """Send a whole answer; without ``content_length`` the body ends at close."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if content_length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            with contextlib.suppress(OSError):
                self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    owner: LoopbackServer

    def __init__(self, owner: LoopbackServer, address: tuple[str, int]) -> None:
        self.owner = owner
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-answer is part of the scenarios; stay quiet."""

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.owner.lock:
            self.owner.connections += 1
        return True

    def finish_request(self, request: Any, client_address: Any) -> None:
        tls = self.owner.tls
        if tls is None:
            super().finish_request(request, client_address)
            return
        try:
            wrapped = tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()


@dataclass
class LoopbackServer:
    """An HTTP server on one loopback address; routes map a path to a responder."""

    host: str = "127.0.0.1"
    port: int = 0
    tls: ssl.SSLContext | None = None
    routes: dict[str, Responder] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0
    sni_names: list[str | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> LoopbackServer:
        if self.tls is not None:
            self.tls.sni_callback = self._record_sni
        self._server = _Server(self, (self.host, self.port))
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _record_sni(self, _sock: Any, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.sni_names.append(name)

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, path: str = "/", *, host: str | None = None) -> str:
        scheme = "https" if self.tls is not None else "http"
        authority = f"{host}:{self.port}" if host is not None else self.authority
        return f"{scheme}://{authority}{path}"

    @property
    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    # -- responders ------------------------------------------------------------------------

    def page(
        self,
        path: str,
        body: bytes | str = b"<html><body><p>hello</p></body></html>",
        *,
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        content_length: bool = True,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = lambda h: h.reply(
            status,
            data,
            content_type=content_type,
            headers=headers,
            content_length=content_length,
        )

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.routes[path] = lambda h: h.reply(
            status, b"", content_type=None, headers={"Location": location}
        )

    def echo(self, path: str) -> None:
        """Answer with the method, the body and the headers it received, as JSON."""

        def respond(handler: Handler) -> None:
            import json

            seen = self.requests[-1]
            payload = {
                "method": seen.method,
                "body": seen.body.decode("utf-8", "replace"),
                "headers": seen.headers,
            }
            handler.reply(200, json.dumps(payload).encode(), content_type="application/json")

        self.routes[path] = respond

    def drip(self, path: str, *, interval: float, count: int = 10_000) -> None:
        """Send headers, then one byte every ``interval`` seconds (the server's own pace)."""

        def respond(handler: Handler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/plain")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
            try:
                handler.wfile.flush()
                for _ in range(count):
                    if self.stopping.wait(interval):
                        return
                    handler.wfile.write(b"x")
                    handler.wfile.flush()
            except OSError:
                return

        self.routes[path] = respond

    def stream(
        self,
        path: str,
        size: int,
        *,
        content_type: str = "text/plain",
        content_length: bool = True,
        chunk: int = 64 * 1024,
    ) -> None:
        """Send ``size`` bytes in chunks, declaring the length or not."""

        def respond(handler: Handler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", content_type)
            if content_length:
                handler.send_header("Content-Length", str(size))
            else:
                handler.send_header("Connection", "close")
                handler.close_connection = True
            handler.end_headers()
            sent = 0
            try:
                while sent < size and not self.stopping.is_set():
                    piece = min(chunk, size - sent)
                    handler.wfile.write(b"a" * piece)
                    sent += piece
            except OSError:
                return

        self.routes[path] = respond


# -- TLS -------------------------------------------------------------------------------------


@dataclass
class CertAuthority:
    """A throwaway certificate authority for HTTPS tests."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls) -> CertAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Corral test CA")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    def client_context(self) -> ssl.SSLContext:
        pem = self.cert.public_bytes(serialization.Encoding.PEM).decode()
        return ssl.create_default_context(cadata=pem)

    def server_context(self, *names: str, tmp_dir: Any) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        cert_path = tmp_dir / f"{names[0]}.pem"
        key_path = tmp_dir / f"{names[0]}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        return context


@pytest.fixture(scope="session")
def cert_authority() -> CertAuthority:
    """A session-wide test CA; ``client_context()`` trusts it."""
    return CertAuthority.create()


# -- servers ---------------------------------------------------------------------------------


@contextlib.contextmanager
def running(*servers: LoopbackServer) -> Iterator[None]:
    try:
        yield
    finally:
        for server in servers:
            server.close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A plain HTTP server on 127.0.0.1."""
    srv = LoopbackServer("127.0.0.1").start()
    with running(srv):
        yield srv


@pytest.fixture
def other_server() -> Iterator[LoopbackServer]:
    """A second HTTP server, on 127.0.0.2 (a different loopback address)."""
    srv = LoopbackServer("127.0.0.2").start()
    with running(srv):
        yield srv


def _twin_servers(first: str, second: str) -> tuple[LoopbackServer, LoopbackServer]:
    """Two servers on the same port at two addresses (retrying until a port fits both)."""
    for _ in range(20):
        a = LoopbackServer(first).start()
        try:
            b = LoopbackServer(second, port=a.port).start()
        except OSError:
            a.close()
            continue
        return a, b
    raise RuntimeError("no port free on both addresses")


@pytest.fixture
def twins() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    """``(public, secret)``: 127.0.0.2:P plays a public site, 127.0.0.1:P holds a secret."""
    public, secret = _twin_servers("127.0.0.2", "127.0.0.1")
    secret.page("/secret", "TOP-SECRET", content_type="text/plain")
    with running(public, secret):
        yield public, secret


# -- fetchers --------------------------------------------------------------------------------


@pytest.fixture
def make_server() -> Iterator[Callable[..., LoopbackServer]]:
    """Start extra servers (``make_server("127.0.0.2", tls=ctx)``); all closed at the end."""
    started: list[LoopbackServer] = []

    def make(host: str = "127.0.0.1", **kwargs: Any) -> LoopbackServer:
        srv = LoopbackServer(host, **kwargs).start()
        started.append(srv)
        return srv

    try:
        yield make
    finally:
        for srv in started:
            srv.close()


@pytest.fixture
def allowing() -> Callable[..., Fetcher]:
    """The :func:`_allowing` factory: a fetcher exempting exactly the given servers."""
    return _allowing


def _allowing(
    *servers: LoopbackServer,
    networks: tuple[str, ...] | None = None,
    resolver: Resolver | None = None,
    ssl_context: ssl.SSLContext | None = None,
    **policy: Any,
) -> Fetcher:
    """A fetcher that may reach exactly these servers' addresses and ports.

    The exemption is built with ``AddressRules.unsafe_allowing``; the production default is
    untouched.
    """
    hosts = networks or tuple(sorted({s.host for s in servers}))
    exempt = [ip_network(ip_address(h)) for h in hosts]
    policy.setdefault("allowed_ports", frozenset(s.port for s in servers))
    return Fetcher(
        FetchPolicy(**policy),
        resolver=resolver,
        addresses=AddressRules.unsafe_allowing(*exempt),
        ssl_context=ssl_context,
    )
