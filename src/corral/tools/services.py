"""Services that higher layers provide to handlers through ``ctx.services``.

Lower layers (shell execution, web) depend only on these protocols; the runtime provides
the implementations when it is installed. A handler must cope with a service being absent
(e.g. a tool called from the CLI outside any conversation).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["REPORTS", "ReportSink"]

REPORTS = "reports"
"""Key of the :class:`ReportSink` in ``platform.services`` / ``ctx.services``."""


class ReportSink(Protocol):
    """Where background work (shells, delegate runs) reports when it ends.

    The runtime stores the report as a ``background_report`` row in the conversation and
    continues the conversation as ``user_id`` once no turn is in flight and no approval is
    open. Reports are durable: queued, never dropped.
    """

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
    ) -> None: ...
