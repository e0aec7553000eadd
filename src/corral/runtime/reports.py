"""Background reports: the :class:`~corral.service_protocols.ReportSink` the runtime provides.

Background work (shells now, delegate runs later) calls ``queue_report`` when it ends. The
report is stored at once, durable; it becomes a ``background_report`` row — a row only the
platform writes, never the model — when its conversation is free, and the conversation then
continues by itself as the person who started the work: never over a turn in flight, never
while an approval is open, and right after the turn that made it wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.runtime.turns import wake

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["Reports"]


class Reports:
    """Implements :class:`corral.service_protocols.ReportSink`."""

    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime

    async def queue_report(
        self,
        *,
        conversation_id: str,
        user_id: str,
        source: str,
        source_id: str,
        title: str,
        text: str,
        data: dict[str, Any],
    ) -> None:
        """Store the report and continue its conversation as soon as it is free."""
        await self._rt.conversations.get(conversation_id)  # NotFound for a wrong id
        delivery = await self._rt.deliveries.queue(
            conversation_id=conversation_id,
            kind="report",
            user_id=user_id,
            source=source,
            source_id=source_id,
            title=title,
            text=text,
            data=data,
        )
        self._rt.events.publish(conversation_id, {"type": "queued", "delivery": delivery.to_json()})
        await wake(self._rt, conversation_id)
