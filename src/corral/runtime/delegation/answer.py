"""The child's answer to its parent: its last substantive turn, clipped keeping both ends.

A step that produced no text does not erase the one before it. A conclusion sits at the
end, so a long answer keeps its head and its tail around a marker that says how much was
dropped and where the whole transcript is.
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.runtime.timeline import TimelineRow

__all__ = ["clip_both_ends", "last_substantive_text"]


def last_substantive_text(rows: Sequence[TimelineRow]) -> str:
    for row in reversed(rows):
        if row.kind == "model_turn":
            text = str(row.data.get("text") or "").strip()
            if text:
                return text
    return ""


def clip_both_ends(text: str, cap: int, transcript_uri: str) -> str:
    if len(text) <= cap:
        return text
    dropped = len(text) - cap
    marker = (
        f"\n\n[… {dropped:,} of {len(text):,} characters dropped from the middle (live setting "
        f"delegate_answer_cap_chars is {cap:,}); the full transcript is {transcript_uri} …]\n\n"
    )
    head = cap // 2
    return text[:head] + marker + text[len(text) - (cap - head) :]
