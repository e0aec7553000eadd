"""A run's stored trace: found by the trace id in the run's ``traceparent``, with a clear
error when the run was not traced or its spans are gone."""

from __future__ import annotations

from corral.errors import NotFound
from corral.kernel.trace_store import TraceStore
from corral.runtime.runs import RunRecord
from corral.tracing.stored import StoredSpan, trace_id_of

__all__ = ["TURN_ON", "run_spans"]

TURN_ON = (
    "turn tracing on with OTEL_TRACES_EXPORTER=corral (the local trace store only) or any "
    "OpenTelemetry exporter (needs corral[otel]); spans are kept for the live setting "
    "trace_keep_days"
)


async def run_spans(traces: TraceStore, run: RunRecord) -> list[StoredSpan]:
    """The stored spans of the trace ``run`` belongs to."""
    trace_id = trace_id_of(run.trace_parent)
    if trace_id is None:
        raise NotFound(f"run {run.id} has no stored trace: tracing was off when it ran; {TURN_ON}")
    spans = await traces.spans(trace_id)
    if not spans:
        raise NotFound(
            f"run {run.id} has no stored trace: its spans were not kept here (older than "
            f"trace_keep_days, or traced by a process without the local store); {TURN_ON}"
        )
    return spans
