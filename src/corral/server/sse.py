"""Server-sent events of one conversation: its rows since a point, then live events.

The reader subscribes before the backlog is read, so nothing falls between the two; live
``row`` events already sent in the backlog are skipped. Each row event carries its
sequence number as the SSE ``id``, so a client reconnects with ``?after=<last id>``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from corral.runtime.runtime import Runtime

__all__ = ["conversation_events"]


def _message(event: dict[str, Any]) -> dict[str, str]:
    message = {"event": str(event["type"]), "data": json.dumps(event, ensure_ascii=False)}
    if event["type"] == "row":
        message["id"] = str(event["row"]["seq"])
    return message


async def conversation_events(
    rt: Runtime, conversation_id: str, *, user: str, after: int = 0, follow: bool = True
) -> AsyncIterator[dict[str, str]]:
    """SSE messages for ``conversation_id``: rows after ``after``, then (with ``follow``)
    every live event until the client goes away."""
    await rt.conversation(conversation_id, user=user)
    async with rt.events.subscribe(conversation_id) as live:
        last = after
        for row in await rt.conversations.rows(conversation_id, after=after):
            last = row.seq
            yield _message({"type": "row", "row": row.to_json()})
        if not follow:
            return
        async for event in live:
            if event["type"] == "row" and event["row"]["seq"] <= last:
                continue
            yield _message(event)
