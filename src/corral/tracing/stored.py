"""A span as the local trace store keeps it, and a run's trace id from its ``traceparent``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StoredSpan", "trace_id_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "name": self.name,
            "kind": self.kind,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "duration_ms": round(self.duration_ms, 3),
            "status": self.status,
            "attributes": self.attributes,
            "events": self.events,
        }


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id of a W3C ``traceparent`` (``00-<trace>-<span>-<flags>``); None when
    it is missing or malformed."""
    parts = (traceparent or "").split("-")
    if len(parts) != 4 or len(parts[1]) != 32:
        return None
    return parts[1].lower()
