"""The span of starting a workflow run: ``invoke_workflow {workflow}`` (GenAI conventions).

It covers the start (the run's conversation, goal, prompt hooks, queueing) and is current
while the run is queued, so the run stores its context and every job's ``invoke_agent`` is
a child of it, in whatever process and however much later the job runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.trace import Span, StatusCode, Tracer

from corral.tracing import Attr, Op

__all__ = ["workflow_span"]


@contextmanager
def workflow_span(
    tracer: Tracer | None, workflow_id: str, title: str, trigger: str
) -> Iterator[Span | None]:
    """The span, or None (and nothing traced) when ``tracer`` is None; an exception marks
    it failed with its type."""
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(
        f"{Op.INVOKE_WORKFLOW} {title}",
        attributes={
            Attr.OPERATION: Op.INVOKE_WORKFLOW,
            Attr.WORKFLOW_NAME: title,
            Attr.WORKFLOW_ID: workflow_id,
            Attr.WORKFLOW_TRIGGER: trigger,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except Exception as exc:
            span.set_attribute(Attr.ERROR_TYPE, getattr(exc, "code", "") or type(exc).__name__)
            span.set_status(StatusCode.ERROR, str(exc)[:500])
            raise
