"""TLS interception: the proxy reads a sandbox's HTTPS requests to apply method and path
rules and to inject credentials.

After the proxy accepted a ``CONNECT`` to a host whose policy has method or path rules (or a
bound credential), :func:`intercept` takes the client's streams: it finishes TLS towards the
client with a leaf for the host from the installation CA (ALPN offers ``http/1.1`` only),
then reads HTTP/1.1 requests one after the other (keep-alive, chunked bodies, ``Expect:
100-continue`` relayed from the upstream as git's smart HTTP needs). Each request is decided
by ``policy.decide_request``; a refused one gets ``403`` with an ``x-proxy-error`` header
naming the rule and the connection ends. An allowed one has its credential placeholders
swapped (:mod:`.credentials`), goes to the upstream over TLS verified against the system
trust store, and the response streams back as it arrives.

HTTP/1.1 parsing and framing is h11's (a well-kept sans-I/O library, already in the
dependency tree through httpx): it frames chunked and sized bodies both ways and tracks
keep-alive, so this module only moves events between two connections.

What this module needs of the proxy's parts is the three Protocols below.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import Callable, Sequence
from typing import Protocol

import h11

from corral.errors import CorralError
from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.credentials import CredentialBinding, swap_credentials

__all__ = [
    "ConnectionLog",
    "RequestDecision",
    "RequestPolicy",
    "UpstreamConnector",
    "intercept",
    "upstream_tls_context",
]

_READ_SIZE = 65_536
_CLOSE_WAIT_SECONDS = 5.0
_DROPPED_REQUEST_HEADERS = frozenset({b"proxy-authorization", b"proxy-connection"})
_DROPPED_RESPONSE_HEADERS = frozenset({b"connection", b"keep-alive", b"proxy-connection"})
_UNSAFE_HEADER_TEXT = re.compile(r"[^\x20-\x7e]")


class RequestDecision(Protocol):
    """The policy's answer for one request (the proxy's ``HostDecision`` fits)."""

    @property
    def allowed(self) -> bool: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...


class RequestPolicy(Protocol):
    """Decides each request seen inside an intercepted connection."""

    def decide_request(self, host: str, method: str, path: str) -> RequestDecision: ...


class UpstreamConnector(Protocol):
    """Opens a plain TCP connection to ``host:port`` whose address passed the address rules
    (the proxy resolves the name itself); :func:`intercept` puts TLS on it."""

    async def open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]: ...


class ConnectionLog(Protocol):
    """The record of one connection: each request seen, and bytes as they pass."""

    def request(self, method: str, path: str, decision: str, rule: str) -> None:
        """One request: ``decision`` is ``allowed`` or ``refused``; ``rule`` what decided."""

    def bytes(self, up: int, down: int) -> None:
        """Bytes more, client to upstream and back (called several times; they add up)."""


def upstream_tls_context() -> ssl.SSLContext:
    """TLS towards real servers: the system trust store, HTTP/1.1 only."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


async def intercept(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    host: str,
    port: int,
    policy: RequestPolicy,
    credentials: Sequence[CredentialBinding],
    upstream: UpstreamConnector,
    record: ConnectionLog,
    *,
    ca: CertificateAuthority,
    upstream_tls: ssl.SSLContext | None = None,
) -> None:
    """Serve one intercepted ``CONNECT host:port`` until either side ends it.

    The client streams must come from an ``asyncio`` server (``start_server`` or
    ``start_unix_server``), with the ``CONNECT`` answered already; they are closed on return.
    """
    exchange = _Exchange(
        host=host,
        port=port,
        client_reader=client_reader,
        client_writer=client_writer,
        policy=policy,
        credentials=credentials,
        upstream=upstream,
        upstream_tls=upstream_tls or upstream_tls_context(),
        record=record,
    )
    try:
        await client_writer.start_tls(ca.server_context(host))
    except (OSError, ssl.SSLError):
        # The client refused our leaf (it does not trust the CA) or went away: nothing to serve.
        await _closed(client_writer)
        return
    try:
        await exchange.serve()
    finally:
        await exchange.close()


async def _closed(writer: asyncio.StreamWriter) -> None:
    """Close ``writer`` and wait for its transport (TLS says goodbye first), within bounds."""
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), _CLOSE_WAIT_SECONDS)


class _Closed(Exception):
    """One side went away or spoke broken HTTP: end the connection."""


class _Exchange:
    def __init__(
        self,
        *,
        host: str,
        port: int,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        policy: RequestPolicy,
        credentials: Sequence[CredentialBinding],
        upstream: UpstreamConnector,
        upstream_tls: ssl.SSLContext,
        record: ConnectionLog,
    ) -> None:
        self.host, self.port = host, port
        self.client_reader, self.client_writer = client_reader, client_writer
        self.policy, self.credentials = policy, credentials
        self.upstream, self.upstream_tls = upstream, upstream_tls
        self.record = record
        self.client = h11.Connection(h11.SERVER)
        self.server: tuple[h11.Connection, asyncio.StreamReader, asyncio.StreamWriter] | None
        self.server = None
        self.dropped: list[asyncio.StreamWriter] = []
        """Upstream connections closed on the way, waited for at the end."""
        self.up = self.down = 0

    async def serve(self) -> None:
        with contextlib.suppress(_Closed):
            while await self._one_request():
                self.client.start_next_cycle()

    async def close(self) -> None:
        self._flush_bytes()
        self._drop_server()
        for writer in [self.client_writer, *self.dropped]:
            await _closed(writer)

    # -- one request ----------------------------------------------------------------------

    async def _one_request(self) -> bool:
        """Serve one request; whether the connection may carry another."""
        try:
            event = await self._next(self.client, self.client_reader, self._count_up)
        except h11.RemoteProtocolError as error:
            await self._answer(400, "bad-request", f"the request is not valid HTTP/1.1: {error}")
            return False
        if not isinstance(event, h11.Request):
            return False
        method = event.method.decode("ascii", "replace")
        target = event.target.decode("ascii", "replace")
        path = target.partition("?")[0]
        decision = self.policy.decide_request(self.host, method, path)
        rule = decision.rule or ""
        self.record.request(method, path, "allowed" if decision.allowed else "refused", rule)
        if not decision.allowed:
            reason = decision.reason or f"{method} {path} on {self.host} is not allowed"
            await self._answer(403, rule or "egress-policy", reason)
            return False
        headers = [(n, v) for n, v in event.headers if n not in _DROPPED_REQUEST_HEADERS]
        target, headers, _ = swap_credentials(self.host, target, headers, self.credentials)
        forwarded = h11.Request(method=event.method, target=target, headers=headers)
        try:
            server, reader, writer = await self._server()
            await self._send(server, writer, forwarded)
        except (OSError, CorralError) as error:
            await self._answer(
                502, "upstream", f"{self.host}:{self.port} cannot be reached: {error}"
            )
            return False
        body = asyncio.create_task(self._pump_body(server, writer))
        try:
            await self._pump_response(server, reader)
        finally:
            self._flush_bytes()
            if not body.done():
                # The upstream answered without taking the whole body (a refusal of an
                # Expect: 100-continue upload): the client's framing is lost, so stop here.
                body.cancel()
        try:
            await body
        except (asyncio.CancelledError, _Closed, OSError):
            return False
        if server.our_state is h11.DONE and server.their_state is h11.DONE:
            server.start_next_cycle()
        else:
            self._drop_server()
        return self.client.our_state is h11.DONE and self.client.their_state is h11.DONE

    async def _pump_body(self, server: h11.Connection, writer: asyncio.StreamWriter) -> None:
        while True:
            event = await self._next(self.client, self.client_reader, self._count_up)
            if isinstance(event, h11.Data):
                await self._send(server, writer, h11.Data(data=event.data))
            elif isinstance(event, h11.EndOfMessage):
                await self._send(server, writer, h11.EndOfMessage(headers=event.headers))
                return
            else:
                raise _Closed

    async def _pump_response(self, server: h11.Connection, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                event = await self._next(server, reader, self._count_down)
            except (h11.RemoteProtocolError, OSError) as error:
                self._drop_server()
                if self.client.our_state is h11.SEND_RESPONSE:
                    await self._answer(502, "upstream", f"the upstream broke off: {error}")
                raise _Closed from None
            if isinstance(event, h11.InformationalResponse | h11.Response):
                headers = [(n, v) for n, v in event.headers if n not in _DROPPED_RESPONSE_HEADERS]
                kind = type(event)
                reply = kind(status_code=event.status_code, headers=headers, reason=event.reason)
                await self._send(self.client, self.client_writer, reply)
            elif isinstance(event, h11.Data):
                await self._send(self.client, self.client_writer, h11.Data(data=event.data))
            elif isinstance(event, h11.EndOfMessage):
                await self._send(self.client, self.client_writer, h11.EndOfMessage())
                return
            else:
                self._drop_server()
                if self.client.our_state is h11.SEND_RESPONSE:
                    await self._answer(502, "upstream", "the upstream closed before answering")
                raise _Closed

    # -- the two connections --------------------------------------------------------------

    async def _server(self) -> tuple[h11.Connection, asyncio.StreamReader, asyncio.StreamWriter]:
        if self.server is not None and self.server[2].transport.is_closing():
            self._drop_server()
        if self.server is None:
            reader, writer = await self.upstream.open(self.host, self.port)
            try:
                await writer.start_tls(self.upstream_tls, server_hostname=self.host)
            except BaseException:
                writer.close()
                raise
            self.server = (h11.Connection(h11.CLIENT), reader, writer)
        return self.server

    def _drop_server(self) -> None:
        if self.server is not None:
            self.server[2].close()
            self.dropped.append(self.server[2])
            self.server = None

    async def _answer(self, status: int, rule: str, reason: str) -> None:
        """The proxy's own reply, naming what refused and why; the connection closes after."""
        if self.client.our_state is not h11.SEND_RESPONSE:
            return
        text = _UNSAFE_HEADER_TEXT.sub("?", f"{rule}: {reason}")[:512]
        body = (text + "\n").encode("ascii")
        headers = [
            ("content-type", "text/plain; charset=utf-8"),
            ("content-length", str(len(body))),
            ("x-proxy-error", text),
            ("connection", "close"),
        ]
        with contextlib.suppress(OSError, h11.LocalProtocolError):
            await self._send(
                self.client, self.client_writer, h11.Response(status_code=status, headers=headers)
            )
            await self._send(self.client, self.client_writer, h11.Data(data=body))
            await self._send(self.client, self.client_writer, h11.EndOfMessage())

    @staticmethod
    async def _next(
        connection: h11.Connection, reader: asyncio.StreamReader, count: Callable[[int], None]
    ) -> h11.Event | type[h11.PAUSED]:
        while True:
            event = connection.next_event()
            if event is h11.PAUSED or isinstance(event, h11.Event):
                return event
            try:
                data = await reader.read(_READ_SIZE)
            except OSError as error:
                raise _Closed from error
            count(len(data))
            connection.receive_data(data)

    @staticmethod
    async def _send(
        connection: h11.Connection, writer: asyncio.StreamWriter, event: h11.Event
    ) -> None:
        data = connection.send(event)
        if data:
            writer.write(data)
            await writer.drain()

    def _count_up(self, size: int) -> None:
        self.up += size

    def _count_down(self, size: int) -> None:
        self.down += size

    def _flush_bytes(self) -> None:
        if self.up or self.down:
            self.record.bytes(self.up, self.down)
            self.up = self.down = 0
