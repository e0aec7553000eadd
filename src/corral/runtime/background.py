"""Background work still running, as the agent's prompt lists it every step.

Lower layers (background shells now, delegate runs later) cannot import the runtime; a
package's install hook registers their source with ``runtime.add_background_work(source)``,
where ``source.running_work(conversation_id)`` returns a list of dicts with ``kind``,
``id``, ``title`` and ``started_at`` (ISO 8601).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["BackgroundWork", "BackgroundWorkSource"]


BackgroundWork = Mapping[str, str]
"""One piece of background work still running: ``kind``, ``id``, ``title``, ``started_at``
(every key optional), as a plain mapping so lower layers provide it without importing this."""


class BackgroundWorkSource(Protocol):
    """Lists the background work still running in a conversation (read every step)."""

    async def running_work(self, conversation_id: str) -> Sequence[BackgroundWork]: ...
