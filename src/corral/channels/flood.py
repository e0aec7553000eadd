"""A per-chat flood limit: at most N inbound messages a minute from one chat."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["FloodGate"]

WINDOW_S = 60.0


class FloodGate:
    """Counts a chat's messages in a sliding minute; the clock is a seam for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._warned: dict[tuple[str, str], float] = {}

    def admit(self, connection: str, chat_id: str, limit: int) -> tuple[bool, bool]:
        """(admitted, warn): warn is True once per window for a chat over its limit."""
        key = (connection, chat_id)
        now = self._clock()
        seen = self._seen.setdefault(key, deque())
        while seen and now - seen[0] >= WINDOW_S:
            seen.popleft()
        if len(seen) < limit:
            seen.append(now)
            return True, False
        warned = self._warned.get(key)
        if warned is not None and now - warned < WINDOW_S:
            return False, False
        self._warned[key] = now
        return False, True

    def forget(self, connection: str) -> None:
        """Drop the counts of a disconnected connection."""
        for key in [k for k in self._seen if k[0] == connection]:
            del self._seen[key]
            self._warned.pop(key, None)
