"""compact_history and /summarize: reversible trims of what the model reads, as overlays.

- ``cards``: a compaction as a timeline card, and the toggle card of "Show full";
- ``trims``: what a trimmed row reads like; ``tokens``: the offline tokenizer;
- ``targets``: checking tool_use_ids and sequence numbers against the timeline;
- ``index``, ``overlay``: applying every compaction to the prompt each step, fast;
- ``context_map``: the state block naming the largest items and their handles;
- ``summarize``: the whole-conversation summary; ``service``: the tool's and people's API.
"""

from corral.runtime.compaction.cards import Compaction, Target
from corral.runtime.compaction.overlay import CompactionOverlay
from corral.runtime.compaction.service import Compactions

__all__ = [
    "Compaction",
    "CompactionOverlay",
    "Compactions",
    "Target",
]
