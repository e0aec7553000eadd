"""JSON bodies, pretty-printed; JSON Lines too."""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["JsonRendering", "NotJson", "render_json"]


class NotJson(ValueError):
    """The body does not parse as JSON; the message says where it stopped."""


@dataclass(frozen=True, slots=True)
class JsonRendering:
    text: str
    lines: int | None = None
    """The number of records when the body was JSON Lines."""


def render_json(text: str) -> JsonRendering:
    """Parse ``text`` as JSON (or JSON Lines) and pretty-print it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":
            records = _json_lines(text)
            if records is not None:
                body = "\n".join(_pretty(record) for record in records)
                return JsonRendering(text=body, lines=len(records))
        raise NotJson(f"{err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise NotJson("nesting too deep to parse") from None
    return JsonRendering(text=_pretty(value))


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _json_lines(text: str) -> list[object] | None:
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                return None
    return records if len(records) > 1 else None
