"""Long polling ``getUpdates`` for Telegram connections without a public URL.

One task per polling connection asks for updates after the stored offset, hands each to
the inbound path (which skips any it has already seen), then moves the offset past them.
An error is recorded on the connection (``check`` shows it) and retried with back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Protocol

from corral.channels.store import ChannelStore, ConnectionRecord
from corral.channels.vendors import Inbound, Poster, SendFailed, Telegram, Vendor
from corral.channels.vendors.telegram import read_update
from corral.errors import CorralError
from corral.store.tables import utcnow

__all__ = ["PollHost", "poll"]


class PollHost(Protocol):
    """What polling needs of the channels service."""

    @property
    def store(self) -> ChannelStore: ...

    @property
    def vendors(self) -> Mapping[str, Vendor]: ...

    async def poster(self, connection: ConnectionRecord, *, timeout_ms: int = ...) -> Poster: ...

    async def secrets(self, connection: ConnectionRecord) -> dict[str, str]: ...

    async def handle(self, connection: ConnectionRecord, event: Inbound) -> None: ...


log = logging.getLogger("corral.channels")
_MAX_BACKOFF_S = 60.0


async def poll(channels: PollHost, name: str) -> None:
    """Poll connection ``name`` until it is removed or the task is cancelled."""
    vendor = channels.vendors["telegram"]
    assert isinstance(vendor, Telegram)
    backoff = 1.0
    while True:
        connection = await channels.store.connection(name)
        if connection is None:
            return
        wait_s = int(connection.fields.get("poll_timeout") or 25)
        try:
            poster = await channels.poster(connection, timeout_ms=(wait_s + 10) * 1000)
            updates = await vendor.call(
                poster,
                await channels.secrets(connection),
                "getUpdates",
                {
                    "offset": connection.poll_offset,
                    "timeout": wait_s,
                    "allowed_updates": ["message", "callback_query"],
                },
            )
        except (SendFailed, CorralError) as exc:
            await channels.store.count(name, "failures", error=f"getUpdates: {exc}")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_S)
            continue
        backoff = 1.0
        offset = connection.poll_offset
        for update in updates or ():
            with contextlib.suppress(Exception):
                offset = max(offset, int(update.get("update_id", 0)) + 1)
            event = read_update(update) if isinstance(update, dict) else None
            if event is None:
                continue
            try:
                await channels.handle(connection, event)
            except Exception:
                log.exception("channel %r: an update could not be handled", name)
        if offset != connection.poll_offset:
            await channels.store.note(name, poll_offset=offset, last_inbound_at=utcnow())
