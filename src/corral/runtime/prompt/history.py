"""Timeline rows to pydantic-ai messages, reused from one build to the next.

Rows group into messages: ``model_turn`` and its ``tool_call`` rows form a ``ModelResponse``;
user messages, reports, inbox messages and tool results between two responses form a
``ModelRequest``. Cards never reach the model.

Building pydantic-ai messages is the expensive part of a prompt (about 4 µs a two-part
message, mostly pydantic-ai's own constructors: a cold build of 10,000 rows spends as much on
it as on reading the rows), so each message is kept with the exact row objects it was built
from and reused while they are the same objects. Overlays that change a row return a new row
object, so only what they changed is rebuilt. Results that re-read files (``volatile``) are
rebuilt every time.

Calls left without a result (a run cut short by a restart) get a synthetic "no result"
return, and a result whose call is not in the preceding response is left out, so the
history always pairs calls with returns as providers require.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.runtime.collector import collector_paused
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt.envelopes import (
    render_channel_message,
    render_message,
    render_report,
)
from corral.runtime.prompt.media import MediaReader, result_content
from corral.runtime.timeline import TimelineRow

__all__ = ["History", "RenderContext"]

_RESPONSE_KINDS = frozenset({"model_turn", "tool_call"})
_REQUEST_KINDS = frozenset({"user_message", "background_report", "message", "tool_result"})
NO_RESULT = "No result: the run ended before this call finished. Check its effect before retrying."


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderContext:
    media: MediaSupport
    reader: MediaReader
    caller: Caller
    sources: SourcePolicy


def _tool_return(
    row: TimelineRow, ctx: RenderContext, now: datetime
) -> tuple[ToolReturnPart, bool]:
    data = row.data
    result = data.get("result") or {}
    blocks = result.get("content", ())
    body: Any
    if (
        type(blocks) is list
        and len(blocks) == 1
        and type(blocks[0]) is dict
        and blocks[0].get("type") == "text"
    ):
        # The common result, one text block: what result_content would make of it.
        body, volatile = str(blocks[0].get("text", "")), False
    else:
        content, volatile = result_content(result, ctx.media, ctx.reader, ctx.caller, ctx.sources)
        body = content[0] if len(content) == 1 else (content or "(no output)")
    if result.get("status") == "denied":
        outcome: Any = "denied"
    else:
        outcome = "failed" if result.get("is_error") else "success"
    part = ToolReturnPart(
        str(data.get("tool", "")),
        body,
        tool_call_id=row.call_id or "",
        outcome=outcome,
        timestamp=now,
    )
    return part, volatile


def _request_part(
    row: TimelineRow, ctx: RenderContext, now: datetime
) -> tuple[ModelRequestPart, bool]:
    """The one part ``row`` puts in a request, and whether it re-reads files."""
    kind = row.kind
    if kind == "tool_result":
        return _tool_return(row, ctx, now)
    data = row.data
    if kind == "user_message":
        if data.get("channel"):
            return UserPromptPart(render_channel_message(data), timestamp=now), False
        text = str(data.get("text", "")) + _hook_context(data)
        attached = data.get("attachments")
        if not attached:
            return UserPromptPart(text, timestamp=now), False
        files, volatile = result_content(
            {"content": attached}, ctx.media, ctx.reader, ctx.caller, ctx.sources
        )
        return UserPromptPart([text, *files], timestamp=now), volatile
    if kind == "background_report":
        return UserPromptPart(render_report(data), timestamp=now), False
    return UserPromptPart(render_message(data), timestamp=now), False


def _hook_context(data: Mapping[str, Any]) -> str:
    """What the operator's UserPromptSubmit hooks added to a message, after it."""
    added = [str(item) for item in data.get("hook_context") or ()]
    if not added:
        return ""
    return "\n\n[Context added by the operator's hooks]\n" + "\n".join(added)


def _interrupted(open_calls: dict[str, str], now: datetime) -> list[ModelRequestPart]:
    """Synthetic returns for calls whose result never came."""
    return [
        ToolReturnPart(tool, NO_RESULT, tool_call_id=call_id, outcome="interrupted", timestamp=now)
        for call_id, tool in open_calls.items()
    ]


class History:
    """One conversation's rows, and the messages built from them."""

    def __init__(self) -> None:
        self.rows: list[TimelineRow] = []
        self.last_seq = 0
        self.stale = False
        """True when rows may exist in the store that this cache has not read."""
        self._media: MediaSupport | None = None
        self._groups: dict[int, tuple[list[TimelineRow], tuple[str, ...], ModelMessage]] = {}
        """Each group's message by its first seq, with the group's rows (never changed once
        handed over) and the calls it answered."""
        self._volatile: set[int] = set()
        self._resume: tuple[int, list[ModelMessage], dict[str, str]] | None = None
        self._resume_rows: list[TimelineRow] | None = None
        """The rows before the resume point when the last build had overlays applied."""

    def extend(self, rows: Sequence[TimelineRow]) -> None:
        for row in rows:
            if row.seq > self.last_seq:
                self.rows.append(row)
                self.last_seq = row.seq

    def messages(self, rows: Sequence[TimelineRow], ctx: RenderContext) -> list[ModelMessage]:
        with collector_paused():
            return self._messages(rows, ctx)

    def _messages(self, rows: Sequence[TimelineRow], ctx: RenderContext) -> list[ModelMessage]:
        """Messages for ``rows`` (the timeline after overlays).

        Without file-backed results, a build resumes where the previous one's last group
        began, so a long conversation costs only its newest rows: at once when ``rows`` is
        :attr:`rows` itself (no overlay changed anything), and after one comparison of the
        rows before that point when overlays handed over a list of their own (unchanged
        rows compare by identity, so this is a fast C loop).
        """
        if ctx.media != self._media:
            self._groups.clear()
            self._volatile.clear()
            self._resume = None
            self._resume_rows = None
            self._media = ctx.media
        now = datetime.now(UTC)  # one clock reading for every part this build makes
        out: list[ModelMessage] = []
        start, open_calls = 0, dict[str, str]()
        if self._resume is not None and not self._volatile and self._resumes(rows):
            start, prefix, open_calls = self._resume
            out = list(prefix)
        group: list[TimelineRow] = []
        responding = False
        group_start, prefix_len, prefix_calls = start, len(out), open_calls
        for index in range(start, len(rows)):
            row = rows[index]
            kind = row.kind
            if kind in _RESPONSE_KINDS:
                if group and not responding:
                    out.append(self._request(group, open_calls, ctx, now))
                    open_calls = {}
                    group = []
                if not group:
                    group_start, prefix_len, prefix_calls = index, len(out), open_calls
                responding = True
                group.append(row)
            elif kind in _REQUEST_KINDS:
                if group and responding:
                    message, open_calls = self._response(group, now)
                    out.append(message)
                    group = []
                if not group:
                    group_start, prefix_len, prefix_calls = index, len(out), open_calls
                responding = False
                group.append(row)
        if group:
            if responding:
                message, open_calls = self._response(group, now)
                out.append(message)
                if open_calls:
                    out.append(ModelRequest(parts=_interrupted(open_calls, now)))
            else:
                out.append(self._request(group, open_calls, ctx, now))
        if not self._volatile:
            self._resume = (group_start, out[:prefix_len], prefix_calls)
            self._resume_rows = None if rows is self.rows else list(rows[:group_start])
        return out

    def _resumes(self, rows: Sequence[TimelineRow]) -> bool:
        """Whether the rows before the last build's resume point are still the same."""
        assert self._resume is not None
        kept = self._resume_rows
        if kept is None:
            return rows is self.rows
        start = self._resume[0]
        if len(rows) < start:
            return False
        before = rows[:start]
        return (before if isinstance(before, list) else list(before)) == kept

    def _cached(self, key: int, rows: list[TimelineRow], context: tuple[str, ...]) -> Any:
        cached = self._groups.get(key)
        if cached is None or key in self._volatile or cached[1] != context:
            return None
        previous = cached[0]
        if len(previous) != len(rows):
            return None
        for a, b in zip(previous, rows, strict=True):
            if a is not b:
                return None
        return cached[2]

    def _response(
        self, rows: list[TimelineRow], now: datetime
    ) -> tuple[ModelMessage, dict[str, str]]:
        key = rows[0].seq
        calls: dict[str, str] = {}
        message = self._cached(key, rows, ())
        if message is not None:
            for row in rows:
                if row.kind == "tool_call":
                    calls[row.call_id or ""] = str(row.data.get("tool", ""))
            return message, calls
        parts: list[ModelResponsePart] = []
        for row in rows:
            data = row.data
            if row.kind == "model_turn":
                text = str(data.get("text", ""))
                if text:
                    parts.append(TextPart(text))
            else:
                tool, call_id = str(data.get("tool", "")), row.call_id or ""
                calls[call_id] = tool
                parts.append(ToolCallPart(tool, data.get("args") or {}, tool_call_id=call_id))
        message = ModelResponse(parts=parts or [TextPart("")], timestamp=now)
        self._groups[key] = (rows, (), message)
        return message, calls

    def _request(
        self,
        rows: list[TimelineRow],
        open_calls: dict[str, str],
        ctx: RenderContext,
        now: datetime,
    ) -> ModelMessage:
        key = rows[0].seq
        context = tuple(open_calls)
        message = self._cached(key, rows, context)
        if message is not None:
            return message  # type: ignore[no-any-return]
        parts: list[ModelRequestPart] = []
        returned: set[str] = set()
        volatile = False
        for row in rows:
            if row.kind == "tool_result":
                call_id = row.call_id
                if call_id not in open_calls or call_id in returned:
                    continue  # its call is not in the response before it
                returned.add(call_id)
            part, row_volatile = _request_part(row, ctx, now)
            parts.append(part)
            if row_volatile:
                volatile = True
        if len(returned) < len(open_calls):
            unanswered = {c: tool for c, tool in open_calls.items() if c not in returned}
            parts[:0] = _interrupted(unanswered, now)
        request = ModelRequest(parts=parts)
        self._groups[key] = (rows, context, request)
        if volatile:
            self._volatile.add(key)
        else:
            self._volatile.discard(key)
        return request
