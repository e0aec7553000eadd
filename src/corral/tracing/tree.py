"""A stored trace as a tree: spans in start order with their depth, for ``corral trace``
and the web UI's waterfall. A span whose parent is not stored (the caller's request span,
another process's span) is a root."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from corral.tracing.stored import StoredSpan

__all__ = ["Placed", "placed", "tree_json"]


@dataclass(frozen=True, slots=True)
class Placed:
    span: StoredSpan
    depth: int
    last: tuple[bool, ...]
    """For each level down to this span: whether the span there is its parent's last child
    (what a text tree draws with ``└─`` instead of ``├─``)."""


def placed(spans: Sequence[StoredSpan]) -> list[Placed]:
    """``spans`` depth first, children by start time."""
    ids = {span.span_id for span in spans}
    children: dict[str | None, list[StoredSpan]] = {}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    out: list[Placed] = []

    def walk(parent: str | None, last: tuple[bool, ...]) -> None:
        kids = children.get(parent, [])
        for index, kid in enumerate(kids):
            here = (*last, index == len(kids) - 1)
            out.append(Placed(kid, len(here) - 1, here))
            walk(kid.span_id, here)

    walk(None, ())
    return out


def tree_json(spans: Sequence[StoredSpan]) -> dict[str, Any]:
    """The trace as JSON: its id, start, end and the spans depth first, each with its depth
    and its offset from the trace's start."""
    if not spans:
        return {"trace_id": None, "start_ns": 0, "duration_ms": 0.0, "spans": []}
    start = min(s.start_ns for s in spans)
    end = max(s.end_ns for s in spans)
    return {
        "trace_id": spans[0].trace_id,
        "start_ns": start,
        "duration_ms": round((end - start) / 1e6, 3),
        "spans": [
            {
                **p.span.to_json(),
                "depth": p.depth,
                "last": list(p.last),
                "offset_ms": round((p.span.start_ns - start) / 1e6, 3),
            }
            for p in placed(spans)
        ],
    }
