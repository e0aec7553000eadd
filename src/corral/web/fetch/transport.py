"""An httpx transport whose sockets can only go to addresses the fetcher checked.

The fetcher resolves and judges a hop, then calls :meth:`PinnedBackend.pin` with the host
and the addresses it accepted. httpcore asks the backend to connect to ``(host, port)`` as
written in the URL; :class:`PinnedBackend` opens the socket to a pinned address instead and
refuses any host it was not told about. TLS is started by httpcore on that socket with
``server_hostname`` set to the URL's host, so SNI and certificate verification use the
original name, and the ``Host`` header is the URL's too.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType

import anyio
import httpcore
import httpx

from .addresses import IPAddress
from .errors import FetchError

__all__ = ["PinnedBackend", "PinnedTransport", "peer_address", "transport_failure"]

_SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)

# Most specific first: the first match wins.
_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _mapped_exceptions() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _EXCEPTIONS:
            if isinstance(exc, source):
                raise target(str(exc) or type(exc).__name__) from exc
        raise


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that connects only to pinned addresses.

    Wraps a real backend (anyio's by default). Pinned addresses are tried in order; each
    but the last gets ``attempt_seconds`` to connect. ``connections`` records every socket
    it opened as ``(host, port, address)``.
    """

    def __init__(
        self, inner: httpcore.AsyncNetworkBackend | None = None, *, attempt_seconds: float = 5.0
    ) -> None:
        self._inner = inner if inner is not None else httpcore.AnyIOBackend()
        self.attempt_seconds = attempt_seconds
        self._pins: dict[tuple[str, int], tuple[IPAddress, ...]] = {}
        self.connections: list[tuple[str, int, IPAddress]] = []

    def pin(self, host: str, port: int, addresses: Sequence[IPAddress]) -> None:
        """Allow new connections to ``host:port``, to these addresses only.

        Replaces earlier pins: only the current hop may open sockets.
        """
        self._pins = {(host, port): tuple(addresses)}

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's backend interface
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to the first pinned address of ``host:port`` that accepts."""
        addresses = self._pins.get((host, port))
        if not addresses:
            raise httpcore.ConnectError(f"no checked address is pinned for {host}:{port}")
        failure: Exception | None = None
        for index, address in enumerate(addresses):
            # With more addresses to try, one that swallows packets may not eat the budget.
            last = index == len(addresses) - 1
            try:
                with anyio.fail_after(None if last else self.attempt_seconds):
                    stream = await self._inner.connect_tcp(
                        str(address),
                        port,
                        timeout=timeout,
                        local_address=local_address,
                        socket_options=socket_options,
                    )
            except (httpcore.ConnectError, httpcore.ConnectTimeout, TimeoutError) as exc:
                failure = exc
                continue
            self.connections.append((host, port, address))
            return stream
        if isinstance(failure, TimeoutError):
            raise httpcore.ConnectTimeout(f"connecting to {host}:{port} timed out")
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's backend interface
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never: fetches only reach TCP addresses."""
        raise httpcore.ConnectError("unix sockets are not reachable through the fetch pipeline")

    async def sleep(self, seconds: float) -> None:
        """Delegate to the wrapped backend."""
        await self._inner.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped_exceptions():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over a :class:`PinnedBackend`; no proxies, no environment, no retries."""

    def __init__(self, backend: PinnedBackend, *, ssl_context: ssl.SSLContext) -> None:
        self.backend = backend
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            network_backend=backend,
            http1=True,
            http2=False,
            retries=0,
            max_connections=4,
            keepalive_expiry=5.0,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the pinned pool."""
        if not isinstance(request.stream, httpx.AsyncByteStream):
            raise TypeError("PinnedTransport needs an async request body")
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _mapped_exceptions():
            response = await self._pool.handle_async_request(core_request)
        if not isinstance(response.stream, AsyncIterable):
            raise TypeError("httpcore returned a synchronous stream")
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._pool.aclose()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


def peer_address(response: httpx.Response) -> str | None:
    """The IP address a response came from, as the socket saw it."""
    stream = response.extensions.get("network_stream")
    if stream is None:
        return None
    peer = stream.get_extra_info("server_addr")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    return None


def _tls_failure(exc: BaseException) -> ssl.SSLError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            return current
        current = current.__cause__ or current.__context__
    return None


def transport_failure(host: str, port: int, exc: httpx.TransportError) -> FetchError:
    """The ``network_error`` for a failed connection, TLS handshake or read."""
    tls = _tls_failure(exc)
    if tls is not None:
        detail = getattr(tls, "verify_message", None) or tls.reason or str(tls)
        message = (
            f"the TLS connection to {host!r} failed ({detail}); the site's certificate is "
            "invalid for this name or the connection was intercepted"
        )
    elif isinstance(exc, httpx.ConnectError):
        message = f"could not connect to {host!r} port {port} ({exc}); the site may be down"
    else:
        message = f"the connection to {host!r} failed ({type(exc).__name__}: {exc}); retry later"
    return FetchError(message, code="network_error", data={"host": host})
