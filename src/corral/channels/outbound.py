"""Outbound calls to vendors: through the hardened fetch path, one vendor host, with retries.

:class:`FetchPoster` sends through the platform's :class:`~corral.web.fetch.Fetcher` with
the vendor's host as the only allowed host and redirects off, so a connection can reach
its vendor and nothing else. :func:`send_with_retry` tries a message up to
``channels_send_attempts`` times, backing off from ``channels_retry_base_ms`` and doubling
(or waiting what the vendor asked for), and reports each retry and the final failure to the
caller's ``note`` so ``check`` can show them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from corral.channels.vendors import Outbound, Poster, SendFailed, Vendor, encode_json
from corral.web.fetch import Fetcher, FetchError

__all__ = ["FetchPoster", "send_with_retry"]

Sleep = Callable[[float], Awaitable[None]]
_TRANSIENT = frozenset({"dns_failure", "network_error", "timeout"})


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
            # The message may name the URL, and a Telegram URL holds the bot token.
            transient = exc.code in _TRANSIENT
            raise SendFailed(
                f"could not reach the vendor ({exc.code})"
                + ("" if transient else "; the address is refused by the fetch policy"),
                retry=transient,
            ) from None
        try:
            return response.status, json.loads(response.body)
        except ValueError:
            return response.status, None


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
    sleep: Sleep = asyncio.sleep,
) -> None:
    """Send ``message``; retries what may pass later, raises the last :class:`SendFailed`."""
    delay = base_delay_s
    for attempt in range(1, attempts + 1):
        try:
            await vendor.send(poster, fields, secrets, message)
            return
        except SendFailed as exc:
            if not exc.retry or attempt == attempts:
                raise
            await note_retry(str(exc))
            await sleep(exc.after if exc.after is not None else delay)
            delay *= 2
