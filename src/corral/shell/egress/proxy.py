"""The egress proxy: HTTP ``CONNECT``, plain ``http://`` forwarding and SOCKS5 on one port.

The first byte of a connection tells the protocols apart (SOCKS5 starts with 5, HTTP with
a method letter). Every connection is judged by the policy on its host name before any
upstream connection, resolved and address-checked by :class:`UpstreamConnector`, and
logged. A refusal is answered the way each protocol can: HTTP ``403`` with an
``x-proxy-error`` header and a one-line body giving the reason, SOCKS5 reply 2 ("not
allowed by ruleset"). A tunnel to a domain with method/path rules or a bound credential
is handed to the TLS interception side when it is present; without it such a domain is
refused unless ``tunnel_unintercepted`` is set (then tunnelled untouched).

Asyncio streams rather than proxy.py or mitmproxy: the plain side is a few hundred lines,
runs inside the platform's event loop per call, and needs our own policy, address rules and
connection log at each step, which those servers take as plug-ins around their own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from corral.shell.egress.log import ConnectionLog, EgressLog
from corral.shell.egress.policy import EgressPolicy, HostDecision
from corral.shell.egress.upstream import UpstreamConnector, UpstreamRefused

__all__ = ["Asker", "EgressProxy", "Interceptor", "load_interceptor"]

log = logging.getLogger("corral.shell.egress")

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 30.0
CHUNK = 64 * 1024
_HOP_HEADERS = frozenset(
    {"proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "trailer",
     "upgrade"}
)  # fmt: skip

Asker = Callable[[str, int], Coroutine[Any, Any, HostDecision]]
"""Asks whether an unmatched host may be reached (a pending decision); its answer decides."""


class Interceptor(Protocol):
    def __call__(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        host: str,
        port: int,
        policy: EgressPolicy,
        credentials: Sequence[Any],
        upstream: UpstreamConnector,
        record: ConnectionLog,
    ) -> Awaitable[None]: ...


def load_interceptor() -> Interceptor | None:
    """The TLS interception side (``corral.shell.egress.intercept``) when it is installed."""
    try:
        module = importlib.import_module("corral.shell.egress.intercept")
    except ImportError:
        return None
    found: Interceptor | None = getattr(module, "intercept", None)
    return found


class _Refused(Exception):
    def __init__(self, decision: HostDecision, record: ConnectionLog) -> None:
        super().__init__(decision.reason)
        self.decision = decision
        self.record = record


@dataclass(slots=True, kw_only=True)
class EgressProxy:
    """One call's proxy: serves connections from the sandbox until closed."""

    policy: EgressPolicy
    upstream: UpstreamConnector
    log: EgressLog
    asker: Asker | None = None
    interceptor: Interceptor | None = None
    credentials: Sequence[Any] = ()
    tunnel_unintercepted: bool = False
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _servers: list[asyncio.Server] = field(default_factory=list)
    _asked: dict[str, asyncio.Task[HostDecision]] = field(default_factory=dict)
    """One question per host and call: a second connection waits on the first's answer."""

    async def serve(self, listener: Any) -> None:
        """Accept connections on ``listener`` (a listening socket) until :meth:`close`."""
        server = await asyncio.start_server(self._accepted, sock=listener, limit=HEAD_LIMIT)
        self._servers.append(server)

    async def close(self) -> None:
        """Stop accepting, drop every open connection (both sides), end their handlers and
        any question still waiting for an answer."""
        for server in self._servers:
            server.close()
        for asked in self._asked.values():
            asked.cancel()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._tasks:
            _, pending = await asyncio.wait(list(self._tasks), timeout=1.0)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        for record in self.log.records:
            if not record.duration:
                record.close()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            first = await asyncio.wait_for(reader.readexactly(1), HEAD_SECONDS)
            if first == b"\x05":
                await self._socks(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # the call ended (close): this handler task is ours and ends here
        except Exception:
            log.exception("egress proxy connection failed")
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    # -- judging ------------------------------------------------------------------------

    async def _decide(self, host: str, port: int) -> HostDecision:
        decision = self.policy.decide_host(host, port)
        if decision.allowed or not decision.ask:
            return decision
        if self.asker is None:
            return HostDecision(
                allowed=False,
                rule="unmatched (ask)",
                reason=f"{decision.reason}; the policy says ask, but this call has no person "
                "to ask (it is not part of a conversation run), so it is refused: an admin adds "
                "the domain to egress.allowed_domains",
            )
        if port not in self.policy.ports:
            return HostDecision(
                allowed=False,
                rule="unmatched (ports)",
                reason=f"{decision.reason}, and port {port} is not one of the policy's ports "
                f"{list(self.policy.ports)}, so nobody was asked: an admin adds the domain "
                "with its ports to egress.allowed_domains",
            )
        key = host.lower()
        asked = self._asked.get(key)
        if asked is None:
            asked = asyncio.get_running_loop().create_task(self.asker(host, port))
            self._asked[key] = asked
        # Shielded: one connection going away must not cancel the question the others share.
        return await asyncio.shield(asked)

    async def _open(
        self, protocol: str, host: str, port: int, *, seen: bool = False
    ) -> tuple[ConnectionLog, HostDecision, asyncio.StreamReader, asyncio.StreamWriter]:
        decision = await self._decide(host, port)
        record = self.log.open(protocol, host, port, decision)
        if not decision.allowed:
            raise _Refused(decision, record)
        unseen = decision.intercept and not seen
        if unseen and self.interceptor is None and not self.tunnel_unintercepted:
            refused = HostDecision(
                allowed=False,
                rule="intercept_unavailable",
                reason=f"{host} has method/path rules or a bound credential, which need TLS "
                "interception, and it is not available here",
            )
            record.decide(refused)
            raise _Refused(refused, record)
        try:
            up_reader, up_writer = await self.upstream.open(host, port, self.policy)
        except UpstreamRefused as exc:
            refused = HostDecision(allowed=False, rule=exc.rule, reason=exc.reason)
            record.decide(refused)
            raise _Refused(refused, record) from None
        self._writers.add(up_writer)
        return record, decision, up_reader, up_writer

    # -- HTTP ---------------------------------------------------------------------------

    async def _http(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = first + await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _http_refusal(writer, 400, "bad-request", "not an HTTP/1.x proxy request")
            return
        method, target, version = parts
        if method == "CONNECT":
            host, port = _host_port(target, default=443)
            await self._connect(host, port, reader, writer)
            return
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            await _http_refusal(
                writer,
                400,
                "bad-request",
                "the proxy takes CONNECT for https and absolute http:// URLs only",
            )
            return
        host, port = url.hostname, url.port or 80
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        fields = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        if self.policy.decide_host(host, port).allowed:
            request_decision = self.policy.decide_request(host, method, path, port=port)
            if request_decision.allowed and "transfer-encoding" in fields:
                request_decision = HostDecision(
                    allowed=False,
                    rule="http_framing",
                    reason="plain http:// requests through the proxy need a Content-Length "
                    "body, not Transfer-Encoding (one request per connection)",
                )
            if not request_decision.allowed:
                refused_record = self.log.open("http", host, port, request_decision)
                refused_record.method, refused_record.path = method, path
                await _http_refusal(
                    writer, 403, _error_code(request_decision), request_decision.reason
                )
                return
        try:
            length = int(fields.get("content-length", "0"))
        except ValueError:
            await _http_refusal(writer, 400, "bad-request", "Content-Length is not a number")
            return
        try:
            record, _, up_reader, up_writer = await self._open("http", host, port, seen=True)
        except _Refused as refused:
            refused.record.method, refused.record.path = method, path
            await _http_refusal(writer, 403, _error_code(refused.decision), refused.decision.reason)
            return
        record.method, record.path = method, path
        headers = [
            line
            for line in lines[1:]
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
        ]
        out = f"{method} {path} {version}\r\n" + "".join(h + "\r\n" for h in headers)
        out += "Connection: close\r\n\r\n"
        up_writer.write(out.encode("latin-1"))
        record.bytes_up += len(out)
        # Exactly this request's body goes up: a second request on the connection (to
        # another host, or with another method) must not ride along unjudged.
        await _pipe_both(reader, writer, up_reader, up_writer, record, up_limit=length)

    async def _connect(
        self, host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            record, decision, up_reader, up_writer = await self._open("connect", host, port)
        except _Refused as refused:
            await _http_refusal(writer, 403, _error_code(refused.decision), refused.decision.reason)
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await self._tunnel(decision, host, port, reader, writer, up_reader, up_writer, record)

    async def _tunnel(
        self,
        decision: HostDecision,
        host: str,
        port: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        record: ConnectionLog,
    ) -> None:
        if decision.intercept and self.interceptor is not None:
            up_writer.close()  # the interceptor opens its own, through the same connector
            await self.interceptor(
                reader, writer, host, port, self.policy, self.credentials, self.upstream, record
            )
            record.close()
            return
        await _pipe_both(reader, writer, up_reader, up_writer, record)

    # -- SOCKS5 -------------------------------------------------------------------------

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count = (await reader.readexactly(1))[0]
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        version, command, _, kind = await reader.readexactly(4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif kind == 3:
            size = (await reader.readexactly(1))[0]
            host = (await reader.readexactly(size)).decode("idna")
        else:
            writer.write(_socks_reply(8))
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:
            # Only CONNECT: no BIND, no UDP ASSOCIATE (the sandbox has no UDP way out).
            self.log.open(
                "socks5",
                host,
                port,
                HostDecision(
                    allowed=False,
                    rule="socks_command",
                    reason=f"SOCKS5 command {command} is not supported (CONNECT only)",
                ),
            )
            writer.write(_socks_reply(7))
            return
        try:
            record, decision, up_reader, up_writer = await self._open("socks5", host, port)
        except _Refused as refused:
            writer.write(_socks_reply(4 if refused.decision.rule == "unreachable" else 2))
            return
        writer.write(_socks_reply(0))
        await writer.drain()
        await self._tunnel(decision, host, port, reader, writer, up_reader, up_writer, record)


def _socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def _error_code(decision: HostDecision) -> str:
    if decision.rule in ("blocked_address", "dns_failure", "unreachable"):
        return decision.rule.replace("_", "-")
    return "blocked-by-allowlist" if decision.rule == "unmatched" else "blocked-by-policy"


async def _http_refusal(writer: asyncio.StreamWriter, status: int, code: str, reason: str) -> None:
    text = {400: "Bad Request", 403: "Forbidden"}[status]
    safe = reason.replace("\r", " ").replace("\n", " ")
    body = f"corral egress proxy: {safe}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {text}\r\nx-proxy-error: {code}\r\nx-proxy-reason: {safe}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode("utf-8", "replace")
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def _host_port(target: str, *, default: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default
    host, sep, port = target.rpartition(":")
    if not sep:
        return target, default
    return host, int(port)


async def _pipe(
    source: asyncio.StreamReader,
    sink: asyncio.StreamWriter,
    count: Callable[[int], None],
    limit: int | None = None,
) -> None:
    left = limit
    try:
        while left is None or left > 0:
            data = await source.read(CHUNK if left is None else min(CHUNK, left))
            if not data:
                if sink.can_write_eof():
                    sink.write_eof()
                return
            if left is not None:
                left -= len(data)
            count(len(data))
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    record: ConnectionLog,
    *,
    up_limit: int | None = None,
) -> None:
    def up(n: int) -> None:
        record.bytes_up += n

    def down(n: int) -> None:
        record.bytes_down += n

    try:
        await asyncio.gather(_pipe(reader, up_writer, up, up_limit), _pipe(up_reader, writer, down))
    finally:
        up_writer.close()
        record.close()
