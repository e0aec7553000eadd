"""The fetcher: the one hardened path for every outbound HTTP request.

For each hop — the first URL and every redirect — the fetcher, in order:

1. parses the URL strictly (http/https only, no credentials) and checks the port, the
   host name rules, the administrator's deny-list and the call's ``allow_hosts``;
2. resolves the host once (literal addresses are not resolved) and checks *every*
   answer: one non-public address refuses the hop;
3. pins the connection to the checked addresses and sends the request, with ``Host``,
   SNI and certificate verification on the original name;
4. on a redirect, rewrites method/body/credentials for the next hop and starts again at 1;
5. otherwise reads the body under the ceiling for its content kind.

One deadline (``timeout_ms``) covers all of it, so a slow drip of bytes cannot outlast it.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any

import anyio
import httpx

from .addresses import AddressRules, IPAddress, connect_form
from .body import ContentKind, declared_kind, media_type, sniffed_kind
from .errors import FetchError
from .hosts import HostPattern, name_refusal
from .policy import FetchPolicy
from .reading import read_response_body
from .redirects import REDIRECT_STATUSES, may_follow, redirected
from .request import Method, Outgoing, build_outgoing
from .resolver import Resolver, SystemResolver
from .response import FetchResponse, Hop, http_error
from .transport import PinnedBackend, PinnedTransport, peer_address, transport_failure
from .urls import Target, join_location, parse_url

__all__ = ["Fetcher"]

_DEFAULT_ACCEPT: tuple[ContentKind, ...] = ("text", "pdf")
_NO_BODY_STATUSES = frozenset({204, 205, 304})


@dataclass(slots=True)
class _Progress:
    """Where a fetch stands, for the message when the deadline hits."""

    url: str
    phase: str = "starting"
    hops: int = 0
    received: int = 0

    def describe(self) -> str:
        text = self.phase
        if self.phase.startswith("reading"):
            text += f", {self.received} bytes received"
        if self.hops:
            text += f", after {self.hops} redirect{'s' if self.hops > 1 else ''}"
        return text


def _after_redirect(exc: FetchError, source: str | None) -> FetchError:
    if source is None:
        return exc
    return FetchError(
        f"the redirect from {source!r} was refused: {exc.message}",
        code=exc.fetch_code,
        data={**exc.data, "redirected_from": source},
    )


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes milliseconds; one verifying context serves every fetcher.
    return httpx.create_ssl_context(trust_env=False)


class Fetcher:
    """Fetches URLs under a :class:`FetchPolicy`; safe to share between tasks.

    ``resolver`` defaults to the system resolver; ``addresses`` to
    :class:`AddressRules` (public addresses only) — the only way to reach anything else is
    ``AddressRules.unsafe_allowing(...)``, for tests. ``ssl_context`` defaults to certifi's
    CA bundle with hostname checking; tests pass one that trusts their own CA.
    """

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        addresses: AddressRules | None = None,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy if policy is not None else FetchPolicy()
        self.resolver: Resolver = resolver if resolver is not None else SystemResolver()
        self.addresses = addresses if addresses is not None else AddressRules()
        self._ssl_context = ssl_context if ssl_context is not None else _default_ssl_context()
        self._clock = clock

    async def fetch(
        self,
        url: str,
        *,
        method: Method = "GET",
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        allow_hosts: Sequence[str] | None = None,
        accept: Collection[ContentKind] = _DEFAULT_ACCEPT,
        timeout_ms: int | None = None,
        follow_redirects: bool = True,
        raise_for_status: bool = False,
    ) -> FetchResponse:
        """Fetch ``url`` and return the final response with its whole body.

        ``json`` (any JSON value) or ``content`` (bytes) is the body of a POST. ``headers``
        are sent on every hop, except credential-like ones, which are dropped when a
        redirect leaves the origin. ``allow_hosts`` (``example.com`` or ``*.example.com``)
        limits every hop to those hosts; empty or ``None`` means no limit. ``accept`` lists
        the content kinds the caller can use; others fail with ``unsupported_content``
        before the body is read. Non-2xx answers are returned unless ``raise_for_status``.
        ``follow_redirects=False`` returns a 3xx answer as it is.

        Raises :class:`FetchError`; see :mod:`corral.web.fetch.errors` for the codes.
        """
        outgoing = build_outgoing(method, headers, json, content, user_agent=self.policy.user_agent)
        allow = self._allow_patterns(allow_hosts)
        budget = self.policy.timeout_seconds(timeout_ms)
        progress = _Progress(url=url)
        started = self._clock()
        transport = PinnedTransport(PinnedBackend(), ssl_context=self._ssl_context)
        try:
            with anyio.fail_after(budget):
                return await self._hops(
                    url,
                    outgoing,
                    transport,
                    allow=allow,
                    accept=frozenset(accept),
                    follow_redirects=follow_redirects,
                    raise_for_status=raise_for_status,
                    progress=progress,
                    started=started,
                )
        except TimeoutError:
            raise FetchError(
                f"fetching {progress.url!r} did not finish within {round(budget * 1000)} ms "
                f"(stopped while {progress.describe()}); retry with a larger timeout_ms (at "
                f"most {self.policy.max_timeout_ms}) or fetch a smaller resource",
                code="timeout",
                url=progress.url,
                data={"timeout_ms": round(budget * 1000), "phase": progress.phase},
            ) from None
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()

    # -- request preparation -------------------------------------------------------------

    @staticmethod
    def _allow_patterns(allow_hosts: Sequence[str] | None) -> tuple[HostPattern, ...] | None:
        if not allow_hosts:
            return None
        entries = [allow_hosts] if isinstance(allow_hosts, str) else list(allow_hosts)
        try:
            return tuple(HostPattern.parse(entry) for entry in entries)
        except FetchError as exc:
            raise FetchError(
                f"allow_hosts: {exc.message}", code="bad_url", data={"allow_hosts": entries}
            ) from None

    # -- the hop loop ----------------------------------------------------------------------

    async def _hops(
        self,
        url: str,
        outgoing: Outgoing,
        transport: PinnedTransport,
        *,
        allow: tuple[HostPattern, ...] | None,
        accept: frozenset[ContentKind],
        follow_redirects: bool,
        raise_for_status: bool,
        progress: _Progress,
        started: float,
    ) -> FetchResponse:
        hops: list[Hop] = []
        current = url
        source: str | None = None
        while True:
            try:
                target = self._check_target(current, allow)
                progress.url = target.url
                progress.phase = f"resolving {target.host.name!r}"
                addresses = await self._checked_addresses(target)
                transport.backend.pin(target.host.name, target.port, addresses)
                progress.phase = f"waiting for {target.host.name!r}"
                response = await self._send(transport, target, outgoing)
            except FetchError as exc:
                raise _after_redirect(exc.at(current), source) from None
            try:
                redirect = self._redirect_of(response, target, outgoing, follow_redirects)
                if redirect is None:
                    return await self._finish(
                        response,
                        target,
                        outgoing,
                        accept=accept,
                        raise_for_status=raise_for_status,
                        hops=tuple(hops),
                        progress=progress,
                        started=started,
                    )
                next_url, cross_origin = redirect
                if len(hops) >= self.policy.max_redirects:
                    raise FetchError(
                        f"{url!r} redirected more than {self.policy.max_redirects} times (the "
                        "limit is the administrator's max_redirects); the redirects may loop — "
                        "fetch the final address directly",
                        code="too_many_redirects",
                        url=target.url,
                        data={"limit": self.policy.max_redirects, "hops": len(hops)},
                    )
                hops.append(
                    Hop(
                        url=target.url,
                        status=response.status_code,
                        address=peer_address(response),
                        location=next_url,
                    )
                )
                outgoing = redirected(outgoing, response.status_code, cross_origin=cross_origin)
                source, current = target.url, next_url
                progress.hops = len(hops)
            finally:
                await response.aclose()

    @staticmethod
    def _redirect_of(
        response: httpx.Response, target: Target, outgoing: Outgoing, follow: bool
    ) -> tuple[str, bool] | None:
        """``(next_url, cross_origin)`` when this answer is a redirect to follow."""
        location = response.headers.get("location")
        if not follow or location is None or response.status_code not in REDIRECT_STATUSES:
            return None
        try:
            next_url = join_location(target, location)
            cross_origin = parse_url(next_url).origin != target.origin
        except FetchError as exc:
            raise _after_redirect(exc, target.url) from None
        if not may_follow(outgoing, response.status_code, cross_origin=cross_origin):
            return None
        return next_url, cross_origin

    def _check_target(self, url: str, allow: tuple[HostPattern, ...] | None) -> Target:
        target = parse_url(url)
        host = target.host
        if target.port not in self.policy.allowed_ports:
            allowed = ", ".join(str(p) for p in sorted(self.policy.allowed_ports))
            raise FetchError(
                f"port {target.port} is not allowed; fetches may only use ports {allowed}",
                code="blocked_port",
                url=target.url,
                data={"port": target.port},
            )
        reason = name_refusal(host)
        if reason is not None:
            raise FetchError(
                f"the host {host.name!r} is refused: {reason}; only public internet hosts "
                "can be fetched",
                code="blocked_host",
                url=target.url,
                data={"host": host.name},
            )
        for pattern in self.policy.deny_patterns:
            if pattern.matches(host):
                raise FetchError(
                    f"the host {host.name!r} is on the administrator's deny-list "
                    f"({str(pattern)!r}); use another source",
                    code="blocked_host",
                    url=target.url,
                    data={"host": host.name, "pattern": str(pattern)},
                )
        if allow is not None and not any(pattern.matches(host) for pattern in allow):
            listed = ", ".join(repr(str(p)) for p in allow)
            raise FetchError(
                f"the host {host.name!r} is not in this call's allow_hosts ({listed}); add it "
                "to allow_hosts if it should be reachable",
                code="blocked_host",
                url=target.url,
                data={"host": host.name, "allow_hosts": [str(p) for p in allow]},
            )
        return target

    async def _checked_addresses(self, target: Target) -> list[IPAddress]:
        host = target.host
        if host.address is not None:
            candidates: Sequence[IPAddress] = [host.address]
        else:
            try:
                candidates = await self.resolver.resolve(host.name, target.port)
            except OSError as exc:
                raise FetchError(
                    f"the host {host.name!r} could not be resolved ({exc}); check the spelling",
                    code="dns_failure",
                    data={"host": host.name},
                ) from None
            if not candidates:
                raise FetchError(
                    f"the host {host.name!r} has no addresses; check the spelling",
                    code="dns_failure",
                    data={"host": host.name},
                )
        checked: list[IPAddress] = []
        for answer in candidates:
            try:
                candidate = ip_address(str(answer))
            except ValueError:
                raise FetchError(
                    f"the resolver returned {answer!r} for {host.name!r}, which is not an address",
                    code="dns_failure",
                    data={"host": host.name},
                ) from None
            address = connect_form(candidate)
            reason = self._address_refusal(candidate) or self._address_refusal(address)
            if reason is not None:
                subject = (
                    f"{candidate}"
                    if host.address is not None
                    else f"{host.name!r} resolves to {candidate}, which"
                )
                raise FetchError(
                    f"{subject} is {reason}; only public internet addresses can be fetched",
                    code="blocked_address",
                    data={"host": host.name, "address": str(candidate)},
                )
            if address not in checked:
                checked.append(address)
        return checked

    def _address_refusal(self, address: IPAddress) -> str | None:
        for network in self.policy.deny_networks:
            if address.version == network.version and address in network:
                return f"in the administrator's denied network {network}"
        return self.addresses.refusal(address)

    async def _send(
        self, transport: PinnedTransport, target: Target, outgoing: Outgoing
    ) -> httpx.Response:
        request = httpx.Request(
            outgoing.method, target.url, headers=list(outgoing.headers), content=outgoing.body
        )
        default_port = 443 if target.scheme == "https" else 80
        if (
            request.url.raw_host.decode("ascii") != target.host.name
            or (request.url.port or default_port) != target.port
        ):
            raise FetchError(f"the URL {target.url!r} cannot be sent unambiguously", code="bad_url")
        try:
            return await transport.handle_async_request(request)
        except httpx.TransportError as exc:
            raise transport_failure(target.host.name, target.port, exc) from None

    # -- the final answer ------------------------------------------------------------------

    async def _finish(
        self,
        response: httpx.Response,
        target: Target,
        outgoing: Outgoing,
        *,
        accept: frozenset[ContentKind],
        raise_for_status: bool,
        hops: tuple[Hop, ...],
        progress: _Progress,
        started: float,
    ) -> FetchResponse:
        status = response.status_code
        if raise_for_status and not 200 <= status < 300:
            raise http_error(target.url, status, response.reason_phrase)
        content_type = response.headers.get("content-type")
        media, charset = media_type(content_type)
        kind = declared_kind(media)
        body = b""
        if outgoing.method != "HEAD" and status not in _NO_BODY_STATUSES and status >= 200:
            progress.phase = "reading the body"

            def seen(size: int) -> None:
                progress.received = size

            try:
                body, kind = await read_response_body(
                    response,
                    url=target.url,
                    media=media,
                    kind=kind,
                    accept=accept,
                    policy=self.policy,
                    progress=seen,
                )
            except httpx.TransportError as exc:
                raise transport_failure(target.host.name, target.port, exc).at(target.url) from None
        elif kind is None:
            kind = sniffed_kind(media, b"")
        return FetchResponse(
            url=target.url,
            status=status,
            reason=response.reason_phrase,
            headers=response.headers,
            content_type=content_type,
            media_type=media,
            charset=charset,
            kind=kind,
            body=body,
            redirects=hops,
            address=peer_address(response),
            elapsed_ms=(self._clock() - started) * 1000,
        )
