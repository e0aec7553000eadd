"""Tool results: content blocks for the model, data for the card, and their shaping.

A handler may return a string, any JSON-able value, or a :class:`ToolResult`. Shaping then
applies the tool result content cap (with a marker naming what was trimmed) and removes
known secret values, so the model never receives more than the cap or a secret.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from corral.errors import ToolError
from corral.secrets import Redactor

__all__ = [
    "AudioBlock",
    "ContentBlock",
    "ImageBlock",
    "ResourceBlock",
    "ResultStatus",
    "TextBlock",
    "ToolResult",
    "Waiting",
    "coerce_result",
    "shape_result",
]

ResultStatus = Literal["ok", "error", "stopped", "timed_out", "pending", "denied"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: bytes
    media_type: str
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class AudioBlock:
    data: bytes
    media_type: str
    type: Literal["audio"] = "audio"


@dataclass(frozen=True, slots=True)
class ResourceBlock:
    """A reference to media with a stable address; the bytes are re-read under access."""

    uri: str
    media_type: str
    title: str | None = None
    type: Literal["resource"] = "resource"


ContentBlock = TextBlock | ImageBlock | AudioBlock | ResourceBlock


@dataclass(frozen=True, slots=True)
class Waiting:
    """What a call that cannot finish yet waits for: a person's decision on an approval, an
    answer to a question… A run parks on it and resumes when it is resolved."""

    kind: str
    """``approval``, ``question``, or a kind a package defines."""
    id: str
    """The id of what is awaited (e.g. ``ap_…``, ``q_…``)."""


@dataclass(slots=True, kw_only=True)
class ToolResult:
    """What a tool call produced.

    ``content`` is what the model reads; ``data`` is structured detail for the card;
    ``keep`` says which end survives when the content cap trims (``tail`` for logs).
    """

    content: list[ContentBlock] = field(default_factory=list)
    data: dict[str, Any] | None = None
    is_error: bool = False
    error_code: str | None = None
    status: ResultStatus = "ok"
    keep: Literal["head", "tail"] = "head"
    waiting: Waiting | None = None
    """Set (with status ``pending``) when the call waits; see :meth:`wait_for`."""

    @classmethod
    def text_result(cls, text: str, **kwargs: Any) -> ToolResult:
        return cls(content=[TextBlock(text)], **kwargs)

    @classmethod
    def wait_for(
        cls, kind: str, id: str, text: str, *, data: dict[str, Any] | None = None, **kwargs: Any
    ) -> ToolResult:
        """A pending result: the call waits for ``kind`` ``id``; the run parks on it."""
        return cls(
            content=[TextBlock(text)],
            data=data,
            status="pending",
            waiting=Waiting(kind, id),
            **kwargs,
        )

    @classmethod
    def from_error(cls, error: ToolError, *, status: ResultStatus = "error") -> ToolResult:
        return cls(
            content=[TextBlock(f"Error [{error.code}]: {error.message}")],
            data={"error": {"code": error.code, "message": error.message, **error.data}},
            is_error=True,
            error_code=error.code,
            status=status,
        )

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_json(self) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ImageBlock | AudioBlock):
                blocks.append(
                    {
                        "type": block.type,
                        "media_type": block.media_type,
                        "data": base64.b64encode(block.data).decode("ascii"),
                    }
                )
            else:
                blocks.append(
                    {
                        "type": "resource",
                        "uri": block.uri,
                        "media_type": block.media_type,
                        "title": block.title,
                    }
                )
        raw: dict[str, Any] = {
            "content": blocks,
            "data": self.data,
            "is_error": self.is_error,
            "error_code": self.error_code,
            "status": self.status,
        }
        if self.waiting is not None:
            raw["waiting"] = {"kind": self.waiting.kind, "id": self.waiting.id}
        return raw

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ToolResult:
        blocks: list[ContentBlock] = []
        for item in raw.get("content", []):
            kind = item.get("type")
            if kind == "text":
                blocks.append(TextBlock(item["text"]))
            elif kind == "image":
                blocks.append(ImageBlock(base64.b64decode(item["data"]), item["media_type"]))
            elif kind == "audio":
                blocks.append(AudioBlock(base64.b64decode(item["data"]), item["media_type"]))
            elif kind == "resource":
                blocks.append(ResourceBlock(item["uri"], item["media_type"], item.get("title")))
        waiting = raw.get("waiting")
        return cls(
            content=blocks,
            data=raw.get("data"),
            is_error=bool(raw.get("is_error")),
            error_code=raw.get("error_code"),
            status=raw.get("status", "ok"),
            waiting=Waiting(str(waiting["kind"]), str(waiting["id"])) if waiting else None,
        )


def coerce_result(value: Any) -> ToolResult:
    """Turn whatever a handler returned into a ToolResult."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text_result(value)
    if isinstance(value, TextBlock | ImageBlock | AudioBlock | ResourceBlock):
        return ToolResult(content=[value])
    if value is None:
        return ToolResult.text_result("(no output)")
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ToolError(
            f"the tool's handler returned a {type(value).__name__}, which is not a string, "
            f"JSON-able value or ToolResult ({exc}); this is a bug in the tool",
            code="bad_handler_result",
        ) from None
    data = value if isinstance(value, dict) else {"value": value}
    return ToolResult(content=[TextBlock(text)], data=data)


def _redact_data(value: Any, redact: Redactor) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_data(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_data(v, redact) for v in value]
    return value


def _holds_secret(value: Any, redact: Redactor) -> bool:
    if isinstance(value, str):
        return redact.finds(value)
    if isinstance(value, dict):
        return any(_holds_secret(v, redact) for v in value.values())
    if isinstance(value, list):
        return any(_holds_secret(v, redact) for v in value)
    return False


def _cap_text(text: str, budget: int, keep: Literal["head", "tail"], cap: int, total: int) -> str:
    cut = len(text) - budget
    marker = (
        f"[… trimmed {cut:,} of {total:,} characters ("
        + ("oldest output" if keep == "tail" else "end")
        + f" dropped): tool result content cap is {cap:,} (live setting "
        "tool_result_content_cap)]"
    )
    if keep == "tail":
        kept = text[-budget:] if budget > 0 else ""
        newline = kept.find("\n")
        if 0 <= newline < 200:
            kept = kept[newline + 1 :]
        return marker + "\n" + kept
    return text[:budget] + "\n" + marker


def shape_result(result: ToolResult, *, cap: int, redact: Redactor) -> ToolResult:
    """Apply redaction and the content cap to a result's text blocks.

    ``result`` itself comes back, uncopied, when there is nothing to redact or trim."""
    texts = [b.text for b in result.content if isinstance(b, TextBlock)]
    if sum(map(len, texts)) <= cap and not (
        redact.active and (any(map(redact.finds, texts)) or _holds_secret(result.data, redact))
    ):
        return result
    blocks = list(result.content)
    if redact.active:
        blocks = [
            replace(b, text=redact(b.text)) if isinstance(b, TextBlock) else b for b in blocks
        ]
    total = sum(len(b.text) for b in blocks if isinstance(b, TextBlock))
    if total > cap:
        budget = cap
        shaped: list[ContentBlock] = []
        marked = False
        order = list(reversed(blocks)) if result.keep == "tail" else blocks
        for block in order:
            if not isinstance(block, TextBlock):
                shaped.append(block)
            elif len(block.text) <= budget:
                shaped.append(block)
                budget -= len(block.text)
            elif not marked:
                shaped.append(TextBlock(_cap_text(block.text, budget, result.keep, cap, total)))
                budget, marked = 0, True
        blocks = list(reversed(shaped)) if result.keep == "tail" else shaped
    data = _redact_data(result.data, redact) if redact.active and result.data else result.data
    return replace(result, content=blocks, data=data)
