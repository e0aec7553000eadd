"""The browser's grace period: a report turn continues in its starter's open browser.

When queued deliveries (a background shell's or delegate run's report, an inbox message)
would continue a conversation as a person who has that conversation open in the UI (a chat
stream of this process signed in as that person), the runtime's wake gate asks
:class:`WakeClaims` first. It offers the continuation to that person's open pages (a
``claim`` event on their stream) and waits up to the live setting
``background_wake_client_grace_ms``; the first page to POST its claim starts the turn as
``trigger="browser"`` and watches it stream. When nobody claims in time, or no such page is
open, or the grace is 0, the server runs the turn as it always did.

Open pages and offers live in this process's memory: on a cluster a wake that happens in
another process (a worker) finds no gate there and runs on the server at once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from corral.platform import Platform
from corral.runtime.runs import RunRecord

__all__ = ["WakeClaims", "install_claims"]

log = logging.getLogger("corral.server")


@dataclass(slots=True)
class _Offer:
    id: str
    user_id: str
    claimed: asyncio.Event = field(default_factory=asyncio.Event)


class WakeClaims:
    """Open chat pages per conversation and user, and the continuations offered to them."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._watching: dict[str, Counter[str]] = {}
        self._offers: dict[str, _Offer] = {}
        self._timers: set[asyncio.Task[None]] = set()

    @contextmanager
    def watching(self, conversation_id: str, user_id: str) -> Iterator[None]:
        """While inside, ``user_id`` has ``conversation_id`` open in a browser."""
        counts = self._watching.setdefault(conversation_id, Counter())
        counts[user_id] += 1
        try:
            yield
        finally:
            counts[user_id] -= 1
            if counts[user_id] <= 0:
                del counts[user_id]
            if not counts:
                self._watching.pop(conversation_id, None)

    def is_watching(self, conversation_id: str, user_id: str) -> bool:
        return self._watching.get(conversation_id, Counter())[user_id] > 0

    async def offer(self, conversation_id: str, user_id: str) -> bool:
        """The runtime's wake gate: True when an open page of ``user_id`` was offered the
        continuation (or one is offered already); the grace timer then decides."""
        if conversation_id in self._offers:
            return True
        if not self.is_watching(conversation_id, user_id):
            return False
        live = await self._platform.kernel.live_settings()
        grace_ms = int(live["background_wake_client_grace_ms"])
        if grace_ms <= 0:
            return False
        offer = _Offer(id=f"wo_{secrets.token_hex(8)}", user_id=user_id)
        self._offers[conversation_id] = offer
        timer = asyncio.create_task(self._expire(conversation_id, offer, grace_ms / 1000))
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)
        self._platform.runtime.events.publish(
            conversation_id, {"type": "claim", "offer": offer.id, "user_id": user_id}
        )
        return True

    async def _expire(self, conversation_id: str, offer: _Offer, grace_s: float) -> None:
        try:
            await asyncio.wait_for(offer.claimed.wait(), grace_s)
            return
        except TimeoutError:
            pass
        if self._offers.get(conversation_id) is not offer:
            return
        del self._offers[conversation_id]
        try:
            await self._platform.runtime.wake(conversation_id, by="server")
        except Exception:  # a timer has nobody to tell: the deliveries stay queued
            log.exception("the unclaimed continuation of %s could not start", conversation_id)

    async def claim(self, conversation_id: str, offer_id: str, user_id: str) -> RunRecord | None:
        """Start the offered continuation as ``user_id``'s browser; None when the offer is not
        (or no longer) theirs: claimed by another page, or the server took over."""
        offer = self._offers.get(conversation_id)
        if offer is None or offer.id != offer_id or offer.user_id != user_id:
            return None
        del self._offers[conversation_id]
        offer.claimed.set()
        return await self._platform.runtime.wake(conversation_id, by="browser")


def install_claims(platform: Platform) -> WakeClaims:
    """A :class:`WakeClaims` registered as ``platform``'s wake gate."""
    claims = WakeClaims(platform)
    platform.runtime.wake_gate = claims.offer
    return claims
