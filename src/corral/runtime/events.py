"""Live events of conversations in this process, for the CLI, the SSE stream and tests.

Events are plain JSON-able dicts with a ``type``:

- ``row``: a timeline row was appended (``row`` is :meth:`TimelineRow.to_json`);
- ``delta``: streamed model text (``run_id``, ``text``);
- ``output``: live output of a running tool call (``call_id``, ``stream``, ``text``);
- ``run``: a run changed status (``run_id``, ``status``, ``reason``, ``detail``).

Rows are durable in the store; events are the live view of this process only. A reader
that starts late reads the rows first, then follows events.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["Event", "EventBus", "StatusBoard", "Subscription"]

Event = dict[str, Any]


class Subscription:
    """One reader's queue of events for one conversation."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue()

    def put(self, event: Event) -> None:
        self._queue.put_nowait(event)

    async def get(self) -> Event:
        return await self._queue.get()

    def get_nowait(self) -> Event | None:
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while True:
            yield await self._queue.get()


class EventBus:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}

    def has_subscribers(self, conversation_id: str) -> bool:
        return bool(self._subscribers.get(conversation_id))

    def publish(self, conversation_id: str, event: Event) -> None:
        for subscription in tuple(self._subscribers.get(conversation_id, ())):
            subscription.put(event)

    @asynccontextmanager
    async def subscribe(self, conversation_id: str) -> AsyncIterator[Subscription]:
        subscription = Subscription()
        self._subscribers.setdefault(conversation_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            remaining = self._subscribers.get(conversation_id)
            if remaining is not None:
                remaining.discard(subscription)
                if not remaining:
                    del self._subscribers[conversation_id]


class StatusBoard:
    """Run statuses as this process last set them, with waiting for a change."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._status: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity
        self._version = 0
        self._changed = asyncio.Condition()

    @property
    def version(self) -> int:
        """Grows with every change; pass it to :meth:`wait_change`."""
        return self._version

    def get(self, run_id: str) -> str | None:
        return self._status.get(run_id)

    async def set(self, run_id: str, status: str) -> None:
        async with self._changed:
            self._status[run_id] = status
            self._status.move_to_end(run_id)
            while len(self._status) > self._capacity:  # waiters were woken when it settled
                self._status.popitem(last=False)
            self._version += 1
            self._changed.notify_all()

    async def bump(self) -> None:
        """Announce a change that is not a run status (a conversation became free)."""
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    async def wait_until(self, run_id: str, statuses: frozenset[str]) -> str:
        """Wait until this process sets the run to one of ``statuses``; returns it."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._status.get(run_id) in statuses)
            return self._status[run_id]

    async def wait_change(self, version: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._version != version)
