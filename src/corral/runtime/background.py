"""Background work still running, as the agent's prompt lists it every step.

Lower layers (background shells now, delegate runs later) cannot import the runtime; they
register a source structurally, without importing anything from here::

    platform.services.setdefault("background_work", []).append(source)

where ``source.running_work(conversation_id)`` returns a list of dicts with ``kind``,
``id``, ``title`` and ``started_at`` (ISO 8601).
"""

from __future__ import annotations

from typing import Protocol, TypedDict

__all__ = ["BACKGROUND_WORK", "BackgroundWork", "BackgroundWorkSource"]

BACKGROUND_WORK = "background_work"
"""Key of the ``list[BackgroundWorkSource]`` in ``platform.services``."""


class BackgroundWork(TypedDict, total=False):
    """One piece of background work still running."""

    kind: str
    id: str
    title: str
    started_at: str


class BackgroundWorkSource(Protocol):
    """Lists the background work still running in a conversation (read every step)."""

    async def running_work(self, conversation_id: str) -> list[BackgroundWork]: ...
