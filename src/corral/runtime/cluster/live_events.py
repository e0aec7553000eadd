"""Live events across processes on PostgreSQL: LISTEN/NOTIFY between Corral processes.

The event bus (:mod:`corral.runtime.events`) is per process, but on a cluster a run's rows
and status changes are written by whichever ``corral worker`` advances it. Every process on
PostgreSQL holds one asyncpg connection that LISTENs on :data:`CHANNEL` and, after its writes
commit, NOTIFYs small payloads there:

- rows: ``{"o": origin, "c": conversation id, "s": first seq, "e": last seq}``;
- a run's status: ``{"o": origin, "c": conversation id, "r": run id, "st": status, ...}``.

A listener ignores its own notifications. For rows it reads the conversation's rows after
the last one it published and publishes them; rows this process wrote pass the same gate, so
each row reaches the local bus once, in seq order (a row with a higher seq never commits
before a lower one: see :mod:`corral.runtime.appends`). The events of one conversation go
through one lane, so a run's status never overtakes the rows written before it. Only
conversations with subscribers are read; the rest cost nothing but the notification.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
from sqlalchemy.engine import make_url

from corral.runtime.conversations import ConversationStore
from corral.runtime.events import Event, EventBus
from corral.runtime.timeline import TimelineRow

__all__ = ["CHANNEL", "EventRelay", "asyncpg_dsn"]

log = logging.getLogger("corral.runtime")

CHANNEL = "corral_events"
DETAIL_CHARS = 1500
"""A NOTIFY payload holds under 8000 bytes: a run's detail is cut to this many characters."""

RECONNECT_FIRST_PAUSE = 0.1
RECONNECT_MAX_PAUSE = 5.0
"""Pauses between attempts to reconnect a lost listener, doubling up to this."""

_SEND = "SELECT pg_notify($1::text, p) FROM unnest($2::text[]) AS p"


def asyncpg_dsn(database_url: str) -> str:
    """The plain ``postgresql://`` DSN of a ``postgresql+asyncpg://`` database URL."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


@dataclass
class _Lane:
    """The pending work of one conversation, done in order by one task at a time."""

    items: deque[tuple[int, int] | Event] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None


class EventRelay:
    """Carries row and run events between the processes sharing one PostgreSQL database."""

    def __init__(
        self,
        database_url: str,
        bus: EventBus,
        conversations: ConversationStore,
        on_run: Callable[[str, str], None] | None = None,
        on_rows: Callable[[str], None] | None = None,
    ) -> None:
        self._dsn = asyncpg_dsn(database_url)
        self._on_run = on_run
        """Told of every run status another process announces (run id, status)."""
        self._on_rows = on_rows
        """Told of every conversation another process stored rows in."""
        self._bus = bus
        self._conversations = conversations
        self._origin = uuid.uuid4().hex
        """Names this relay's notifications (two platforms may share one process)."""
        self._published: dict[str, int] = {}
        """The last seq published on the bus, per conversation with subscribers."""
        self._lanes: dict[str, _Lane] = {}
        self._outbox: list[str] = []
        self._wake = asyncio.Event()
        self._connection: asyncpg.Connection | None = None
        self._sender: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        """Connect, LISTEN, and start sending this process's notifications."""
        await self._connect()
        self._sender = asyncio.create_task(self._send_loop(), name="corral-event-relay")

    async def _connect(self) -> None:
        connection = await asyncpg.connect(self._dsn)
        connection.add_termination_listener(self._lost)
        await connection.add_listener(CHANNEL, self._heard)
        self._connection = connection

    def _lost(self, connection: object) -> None:
        if connection is self._connection and not self._closing:
            self._connection = None
            self._wake.set()  # the sender reconnects

    async def _reconnect(self) -> None:
        """Connect again; then read what was missed for every conversation followed here
        (LISTEN comes first, so nothing committed after the read goes unheard)."""
        pause = RECONNECT_FIRST_PAUSE
        while not self._closing:
            try:
                await self._connect()
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("live events: reconnecting to PostgreSQL failed (%s)", exc)
                await asyncio.sleep(pause)
                pause = min(pause * 2, RECONNECT_MAX_PAUSE)
                continue
            for conversation_id, last in list(self._published.items()):
                self._enqueue(conversation_id, (last + 1, last + 1))
            return

    async def close(self) -> None:
        """Send what is queued, stop listening, and disconnect."""
        if self._sender is not None:
            self._closing = True
            self._wake.set()
            if self._connection is None:  # reconnecting: nothing could be sent anyway
                self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
            self._sender = None
        for lane in list(self._lanes.values()):
            if lane.task is not None:
                lane.task.cancel()
        connection = self._connection
        if connection is not None:
            try:
                await self._flush()  # what was queued after the last send
            except Exception as exc:
                log.warning("live events queued at shutdown were not sent (%s)", exc)
            finally:
                self._connection = None
                await connection.close()

    # -- what this process wrote ------------------------------------------------------------

    def local_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Rows this process stored: announce them to the others, publish them here."""
        if not rows:
            return
        self._queue({"c": conversation_id, "s": rows[0].seq, "e": rows[-1].seq})
        if not self._bus.has_subscribers(conversation_id):
            self._published.pop(conversation_id, None)
            return
        last = self._published.get(conversation_id)
        busy = conversation_id in self._lanes
        if busy or (last is not None and rows[0].seq > last + 1):
            self._enqueue(conversation_id, (rows[0].seq, rows[-1].seq))  # a gap: read it
            return
        self._publish_rows(conversation_id, rows)

    def local_event(self, conversation_id: str, event: Event) -> None:
        """A run status event of this process: announce it, publish it here in its turn."""
        payload = {"c": conversation_id, "r": event["run_id"], "st": event["status"]}
        payload |= {"re": event["reason"], "d": str(event["detail"])[:DETAIL_CHARS]}
        self._queue(payload)
        if conversation_id in self._lanes:
            self._enqueue(conversation_id, event)
        else:
            self._bus.publish(conversation_id, event)

    def _queue(self, payload: dict[str, Any]) -> None:
        if self._sender is None:
            return
        self._outbox.append(json.dumps({"o": self._origin, **payload}, ensure_ascii=False))
        self._wake.set()

    async def _send_loop(self) -> None:
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            if self._connection is None:
                await self._reconnect()
            try:
                await self._flush()
            except Exception:
                connection = self._connection
                if connection is not None and connection.is_closed():
                    self._lost(connection)  # the batch went back to the outbox
                else:
                    log.exception("notifying other processes of live events failed")

    async def _flush(self) -> None:
        batch, self._outbox = self._outbox, []
        if not batch or self._connection is None:
            self._outbox[:0] = batch
            return
        try:
            await self._connection.execute(_SEND, CHANNEL, batch)
        except Exception:
            if self._connection is None or self._connection.is_closed():
                self._outbox[:0] = batch  # sent again once connected
            raise

    # -- what other processes wrote ---------------------------------------------------------

    def _heard(self, connection: object, pid: int, channel: str, payload: str) -> None:
        try:
            note = json.loads(payload)
            if note["o"] == self._origin:
                return
            conversation_id = str(note["c"])
            if "r" in note and self._on_run is not None:
                self._on_run(str(note["r"]), str(note["st"]))
            elif "r" not in note and self._on_rows is not None:
                self._on_rows(conversation_id)
            if not self._bus.has_subscribers(conversation_id):
                self._published.pop(conversation_id, None)
                return
            if "r" in note:
                event: Event = {
                    "type": "run",
                    "run_id": note["r"],
                    "status": note["st"],
                    "reason": note.get("re"),
                    "detail": note.get("d", ""),
                }
                self._enqueue(conversation_id, event)
            else:
                self._enqueue(conversation_id, (int(note["s"]), int(note["e"])))
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring a malformed live-event notification %r", payload[:200])

    def _enqueue(self, conversation_id: str, item: tuple[int, int] | Event) -> None:
        lane = self._lanes.setdefault(conversation_id, _Lane())
        lane.items.append(item)
        if lane.task is None:
            lane.task = asyncio.create_task(
                self._drain(conversation_id, lane), name=f"corral-events-{conversation_id}"
            )

    async def _drain(self, conversation_id: str, lane: _Lane) -> None:
        try:
            while lane.items:
                item = lane.items.popleft()
                if not isinstance(item, tuple):
                    self._bus.publish(conversation_id, item)
                    continue
                try:
                    await self._catch_up(conversation_id, *item)
                except Exception:  # the next notification of this conversation reads again
                    log.exception("reading rows of %s for live events failed", conversation_id)
        finally:
            del self._lanes[conversation_id]

    async def _catch_up(self, conversation_id: str, first: int, last: int) -> None:
        published = self._published.get(conversation_id)
        if published is not None and published >= last:
            return
        after = first - 1 if published is None else published
        rows = await self._conversations.rows(conversation_id, after=after)
        if not self._bus.has_subscribers(conversation_id):
            self._published.pop(conversation_id, None)
            return
        self._publish_rows(conversation_id, rows)

    def _publish_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        last = self._published.get(conversation_id)
        for row in rows:
            if last is None or row.seq > last:
                self._bus.publish(conversation_id, {"type": "row", "row": row.to_json()})
                last = row.seq
        if last is not None:
            self._published[conversation_id] = last
