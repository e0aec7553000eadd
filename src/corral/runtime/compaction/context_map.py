"""The context map: the largest items in the model's context, with the handles
compact_history takes (a tool output's tool_use_id, a non-tool row's sequence number).

A state block; it appears only while some prompt item is large, so a short conversation
pays nothing for it.
"""

from __future__ import annotations

import sys

from corral.runtime.compaction.overlay import CompactionOverlay
from corral.runtime.prompt import PromptView
from corral.runtime.rewinds import RewindOverlay

__all__ = ["ContextMap"]

ITEMS = 8
TAG = "context_map"


class ContextMap:
    name = "context_map"

    def __init__(self, overlay: CompactionOverlay) -> None:
        self._overlay = overlay
        self.rewinds: RewindOverlay | None = None
        """Rows a rewind hid are not in the model's context: they are left off the map."""

    async def render(self, view: PromptView) -> str | None:
        index = self._overlay.index(view.conversation_id, view.rows)
        ranges = self.rewinds.ranges(view) if self.rewinds is not None else []
        if ranges:
            every = index.large_items(sys.maxsize)
            items = [i for i in every if not any(a <= i.seq <= b for a, b in ranges)][:ITEMS]
        else:
            items = index.large_items(ITEMS)
        if not items:
            return None
        lines = [f"- {item.handle} ({item.label}): ~{item.tokens:,} tokens" for item in items]
        return (
            f"<{TAG}>\nThe largest items in your context. If one no longer serves the goal, "
            "compact_history can trim it by this handle:\n" + "\n".join(lines) + f"\n</{TAG}>"
        )
