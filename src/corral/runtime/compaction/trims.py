"""What a trimmed row reads like, and the text a row puts in the prompt (for counting).

Trims return new row objects and never drop a row: a tool output keeps its place (every
call still has its return, as providers require) with its content replaced; a message keeps
its place with its text replaced. Only a /summarize range drops rows, replacing them all
with one summary row.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from corral.runtime.compaction.cards import Compaction
from corral.runtime.prompt.envelopes import render_message, render_report
from corral.runtime.timeline import TimelineRow

__all__ = ["TRIMMABLE", "prompt_text", "summary_row", "trim_row", "trim_text"]

TRIMMABLE: frozenset[str] = frozenset(
    {"user_message", "model_turn", "tool_result", "background_report", "message"}
)
"""Row kinds a compaction can trim (tool outputs by tool_use_id, the others by seq)."""


def _result_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    return "\n".join(
        str(block.get("text", ""))
        for block in result.get("content") or ()
        if isinstance(block, dict) and block.get("type") == "text"
    )


def _media_count(result: Any) -> int:
    if not isinstance(result, dict):
        return 0
    return sum(
        1
        for block in result.get("content") or ()
        if isinstance(block, dict) and block.get("type") != "text"
    )


def prompt_text(row: TimelineRow) -> str:
    """The text ``row`` puts in the model's prompt (media blocks not counted)."""
    data = row.data
    if row.kind == "tool_result":
        return _result_text(data.get("result"))
    if row.kind == "background_report":
        return render_report(data)
    if row.kind == "message":
        return render_message(data)
    if row.kind == "tool_call":
        return f"{data.get('tool', '')} {json.dumps(data.get('args') or {}, ensure_ascii=False)}"
    return str(data.get("text", ""))


def _body(row: TimelineRow) -> str:
    """The part of the row a trim replaces: a result's text, a message's own text."""
    if row.kind == "tool_result":
        return _result_text(row.data.get("result"))
    return str(row.data.get("text", ""))


def trim_text(text: str, compaction: Compaction, position: int, first_ref: str) -> str:
    """The replacement text of the ``position``-th target of ``compaction``."""
    why = f": {compaction.reason}" if compaction.reason else ""
    if compaction.action == "remove":
        return f"[removed from your context by compact_history {compaction.id}{why}]"
    if compaction.action == "summarize":
        if position == 0:
            return f"[summarized by compact_history {compaction.id}] {compaction.summary or ''}"
        return f"[summarized by compact_history {compaction.id} together with {first_ref}]"
    keep = max(0, compaction.keep_chars)
    if len(text) <= keep:
        return text
    tail_chars = keep // 2
    head = text[: keep - tail_chars]
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    cut = len(text) - len(head) - len(tail)
    return (
        f"{head}\n[… {cut:,} characters trimmed by compact_history {compaction.id}{why} …]\n{tail}"
    )


def trim_row(row: TimelineRow, compaction: Compaction, position: int) -> TimelineRow:
    """A copy of ``row`` as the ``position``-th target of ``compaction`` shows it."""
    first_ref = compaction.targets[0].ref if compaction.targets else ""
    text = trim_text(_body(row), compaction, position, first_ref)
    if row.kind == "tool_result":
        result = dict(row.data.get("result") or {})
        media = _media_count(result)
        if media and compaction.action == "truncate":
            text += f"\n[{media} media block(s) removed by compact_history {compaction.id}]"
        result["content"] = [{"type": "text", "text": text}]
        return replace(row, data={**row.data, "result": result})
    return replace(row, data={**row.data, "text": text})


def summary_row(compaction: Compaction) -> TimelineRow:
    """The one row a /summarize range shows instead of rows ``first_seq`` to ``last_seq``."""
    text = (
        f"[Summary of the conversation so far (rows {compaction.first_seq} to "
        f"{compaction.last_seq}), written at the user's request with /summarize. The full "
        f"rows are kept and can be shown again.]\n{compaction.summary or ''}"
    )
    return TimelineRow(seq=compaction.first_seq, kind="user_message", data={"text": text})
