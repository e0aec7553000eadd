"""Outbound calls to vendors: through the hardened fetch path, one vendor host, with retries.

:class:`FetchPoster` sends through the platform's :class:`~corral.web.fetch.Fetcher` with
the vendor's host as the only allowed host and redirects off, so a connection can reach
its vendor and nothing else. A vendor API an administrator named in the live setting
``channels_api_hosts`` (a self-hosted Telegram Bot API server, a stand-in on the local
network) is reached directly by :class:`TrustedPoster` instead, loopback and private
addresses included; :func:`vendor_poster` picks. :func:`send_with_retry` tries a message
``channels_send_attempts`` times, backing off from ``channels_retry_base_ms`` and doubling
(or waiting what the vendor asked for); through a vendor outage it keeps trying, at most
20 s apart (and within half a claim's lease), until ``channels_outage_retry_s`` passed,
and reports each retry to the caller's ``note_retry`` so ``check`` can show them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from corral.channels.vendors import Outbound, Poster, SendFailed, Vendor, encode_json
from corral.web.fetch import FetchError

if TYPE_CHECKING:
    from corral.web.fetch import Fetcher

__all__ = [
    "API_HOSTS_SETTING",
    "FetchPoster",
    "TrustedPoster",
    "host_port",
    "send_with_retry",
    "trusted_hosts",
    "vendor_poster",
]

Sleep = Callable[[float], Awaitable[None]]
_TRANSIENT = frozenset({"dns_failure", "network_error", "timeout"})
_MAX_OUTAGE_DELAY_S = 20.0
API_HOSTS_SETTING = "channels_api_hosts"


def host_port(url: str) -> str:
    """``host:port`` of ``url`` (the scheme's default port when it names none)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname or ''}:{port}"


def trusted_hosts(live: Mapping[str, Any]) -> frozenset[str]:
    """The ``host`` and ``host:port`` entries of ``channels_api_hosts``, lowercased."""
    raw = str(live.get(API_HOSTS_SETTING) or "")
    return frozenset(part.strip().lower() for part in raw.split(",") if part.strip())


def _trusted(url: str, live: Mapping[str, Any]) -> bool:
    allowed = trusted_hosts(live)
    where = host_port(url).lower()
    return where in allowed or where.rsplit(":", 1)[0] in allowed


class FetchPoster:
    """A :class:`~corral.channels.vendors.Poster` over the hardened fetch pipeline."""

    def __init__(self, fetcher: Fetcher, allow_host: str, *, timeout_ms: int = 30_000) -> None:
        self._fetcher = fetcher
        self._allow = [allow_host]
        self._timeout_ms = timeout_ms

    @classmethod
    def for_url(cls, fetcher: Fetcher, url: str, *, timeout_ms: int = 30_000) -> FetchPoster:
        """A poster allowed to reach only the host of ``url``."""
        host = urlsplit(url).hostname or ""
        return cls(fetcher, host, timeout_ms=timeout_ms)

    async def post(
        self, url: str, payload: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        try:
            response = await self._fetcher.fetch(
                url,
                method="POST",
                content=encode_json(payload),
                headers={"Content-Type": "application/json", **(headers or {})},
                allow_hosts=self._allow,
                follow_redirects=False,
                timeout_ms=self._timeout_ms,
            )
        except FetchError as exc:
            raise _unreachable(url, exc) from None
        return response.status, _decoded(response.body)


def _unreachable(url: str, exc: FetchError) -> SendFailed:
    # Never the URL or the fetch message in full: a Telegram URL holds the bot token.
    if exc.code in _TRANSIENT:
        return SendFailed(
            f"could not reach the vendor at {host_port(url)} ({exc.code})", retry=True
        )
    where = host_port(url)
    address = (exc.data or {}).get("address")
    named = f"{where} (address {address})" if address else where
    return SendFailed(
        f"the vendor API at {named} is refused by the fetch policy ({exc.code}): only public "
        "internet hosts on the allowed ports are reached. For a self-hosted vendor API or a "
        f"stand-in, an administrator can allow it with `corral settings set "
        f"{API_HOSTS_SETTING} {where}`",
        retry=False,
    )


def _decoded(body: bytes | str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class TrustedPoster:
    """Posts straight to a vendor host an administrator allowed (``channels_api_hosts``):
    no address rules, still no redirects."""

    def __init__(self, *, timeout_ms: int = 30_000) -> None:
        self._timeout_s = timeout_ms / 1000

    async def post(
        self, url: str, payload: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        import httpx  # with the first direct post: opening the platform never needs it

        try:
            async with httpx.AsyncClient(
                follow_redirects=False, timeout=self._timeout_s, trust_env=False
            ) as client:
                response = await client.post(
                    url,
                    content=encode_json(payload),
                    headers={"Content-Type": "application/json", **(headers or {})},
                )
        except httpx.HTTPError as exc:
            raise SendFailed(
                f"could not reach the vendor at {host_port(url)} ({type(exc).__name__})",
                retry=True,
            ) from None
        return response.status_code, _decoded(response.content)


def vendor_poster(
    fetcher: Fetcher, live: Mapping[str, Any], url: str, *, timeout_ms: int = 30_000
) -> Poster:
    """The poster for a vendor API at ``url``: direct when an administrator allowed its
    host, else through the fetch policy (that host only)."""
    if _trusted(url, live):
        return TrustedPoster(timeout_ms=timeout_ms)
    return FetchPoster.for_url(fetcher, url, timeout_ms=timeout_ms)


async def send_with_retry(
    vendor: Vendor,
    poster: Poster,
    fields: Mapping[str, str],
    secrets: Mapping[str, str],
    message: Outbound,
    *,
    attempts: int,
    base_delay_s: float,
    note_retry: Callable[[str], Awaitable[None]],
    outage_s: float = 0.0,
    max_delay_s: float = _MAX_OUTAGE_DELAY_S,
    before_try: Callable[[], Awaitable[None]] | None = None,
    refused: Callable[[], Awaitable[None]] | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Send ``message``; retries what may pass later, ``attempts`` times and then on through
    an outage until ``outage_s`` passed since the first failure; raises the last
    :class:`SendFailed`. ``before_try`` runs before each call, ``refused`` after each
    refusal (the relay notes the piece in flight). The vendor's id of the message sent."""
    delay = base_delay_s
    cap = min(_MAX_OUTAGE_DELAY_S, max_delay_s)
    started: float | None = None
    attempt = 0
    while True:
        attempt += 1
        if before_try is not None:
            await before_try()
        try:
            return await vendor.send(poster, fields, secrets, message)
        except SendFailed as exc:
            if refused is not None:
                await refused()
            now = clock()
            started = now if started is None else started
            if not exc.retry or (attempt >= attempts and now - started >= outage_s):
                raise
            await note_retry(str(exc))
            wait = exc.after if exc.after is not None else delay
            if attempt >= attempts:  # an outage: at most 20 s apart, never past the bound
                wait = min(wait, cap, max(0.0, outage_s - (now - started)))
            await sleep(wait)
            delay *= 2
            if attempt >= attempts:
                delay = min(max(delay, 0.05), cap)
