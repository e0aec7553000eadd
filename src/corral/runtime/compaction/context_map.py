"""The context map: the largest items in the model's context, with the handles
compact_history takes (a tool output's tool_use_id, a non-tool row's sequence number).

A state block; it appears only while some prompt item is large, so a short conversation
pays nothing for it.
"""

from __future__ import annotations

from corral.runtime.compaction.overlay import CompactionOverlay
from corral.runtime.prompt import PromptView

__all__ = ["ContextMap"]

ITEMS = 8
TAG = "context_map"


class ContextMap:
    name = "context_map"

    def __init__(self, overlay: CompactionOverlay) -> None:
        self._overlay = overlay

    async def render(self, view: PromptView) -> str | None:
        items = self._overlay.index(view.conversation_id, view.rows).large_items(ITEMS)
        if not items:
            return None
        lines = [f"- {item.handle} ({item.label}): ~{item.tokens:,} tokens" for item in items]
        return (
            f"<{TAG}>\nThe largest items in your context. If one no longer serves the goal, "
            "compact_history can trim it by this handle:\n" + "\n".join(lines) + f"\n</{TAG}>"
        )
