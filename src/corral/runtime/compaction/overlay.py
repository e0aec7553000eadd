"""The compaction overlay: one prompt overlay for every compaction of every conversation.

Registered once with ``runtime.prompt.add_overlay``. It keeps a
:class:`~corral.runtime.compaction.index.ConversationIndex` per conversation (the most
recently used ones), built from the timeline rows the prompt builder already holds, so a
step costs a scan of the new rows and one pass over the trimmed ones, however many
compactions the conversation has. It never sees the system part, and stored rows are never
changed: switching a compaction off ("Show full") restores the rows as they were.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from corral.runtime.compaction.index import ConversationIndex
from corral.runtime.prompt import PromptView
from corral.runtime.timeline import TimelineRow

__all__ = ["CompactionOverlay"]


class CompactionOverlay:
    def __init__(self, *, capacity: int = 64) -> None:
        self._indexes: OrderedDict[str, ConversationIndex] = OrderedDict()
        self._capacity = capacity

    def index(self, conversation_id: str, rows: Sequence[TimelineRow]) -> ConversationIndex:
        """The up-to-date index of a conversation whose timeline is ``rows``."""
        index = self._indexes.get(conversation_id)
        if index is None or index.source is not rows:
            index = ConversationIndex(rows)
            self._indexes[conversation_id] = index
            while len(self._indexes) > self._capacity:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(conversation_id)
        index.update()
        return index

    def __call__(self, rows: Sequence[TimelineRow], view: PromptView) -> Sequence[TimelineRow]:
        return self.index(view.conversation_id, view.rows).apply(rows)
