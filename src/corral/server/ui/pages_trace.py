"""A conversation's Trace tab: one run's stored trace (the local trace store) as a
waterfall — a bar per span by start and duration, nested by parent, stage spans with their
decision, events such as parked and resumed marked on their span's row."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from corral.errors import NotFound
from corral.runtime.run_trace import run_spans
from corral.server.ui.access import PageCaller, UiRoute
from corral.server.ui.render import templates
from corral.tracing.tree import tree_json

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

WIDTH = 1000
"""The waterfall's width in SVG user units (bars scale with the column)."""

DEPTH_SHOWN = 9
"""Nesting deeper than this is indented as this (the stylesheet has classes up to it)."""


@router.get("/c/{conversation_id}/trace")
async def trace_tab(conversation_id: str, who: PageCaller, run: str | None = None) -> Response:
    """The trace of ``run`` (default: the conversation's latest run)."""
    rt = who.platform.runtime
    conversation = await rt.conversation(conversation_id, user=who.user)
    runs = await rt.runs.list_runs(conversation_id=conversation_id, limit=50)
    chosen = runs[0] if runs and run is None else next((r for r in runs if r.id == run), None)
    if run is not None and chosen is None:
        raise NotFound(f"no run {run!r} in this conversation")
    waterfall: dict[str, Any] | None = None
    missing = ""
    if chosen is not None:
        try:
            waterfall = _waterfall(tree_json(await run_spans(who.platform.kernel.traces, chosen)))
        except NotFound as error:
            missing = str(error)
    page = templates.get_template("trace.html").render(
        who=who,
        conversation=conversation,
        tab="trace",
        runs=runs,
        chosen=chosen,
        waterfall=waterfall,
        missing=missing,
        width=WIDTH,
    )
    return HTMLResponse(page)


def _waterfall(tree: dict[str, Any]) -> dict[str, Any]:
    """Each span's bar and event marks in SVG units of the trace's whole duration."""
    total = max(float(tree["duration_ms"]), 1e-6)
    start_ns = int(tree["start_ns"])
    scale = WIDTH / total

    def at(ms: float) -> float:
        return round(min(max(ms * scale, 0.0), WIDTH), 2)

    spans = []
    for span in tree["spans"]:
        x = at(span["offset_ms"])
        spans.append(
            {
                **span,
                "indent": min(span["depth"], DEPTH_SHOWN),
                "decision": span["attributes"].get("corral.stage.decision", ""),
                "x": x,
                "w": max(round(span["duration_ms"] * scale, 2), 1.5),
                "marks": [
                    {
                        **event,
                        "x": at((event["at_ns"] - start_ns) / 1e6),
                        "label": _label(event),
                    }
                    for event in span["events"]
                ],
            }
        )
    return {**tree, "spans": spans}


def _label(event: dict[str, Any]) -> str:
    attributes = " ".join(
        f"{key.removeprefix('corral.')}={value}"
        for key, value in sorted(event["attributes"].items())
    )
    return f"{event['name']} {attributes}".strip()
