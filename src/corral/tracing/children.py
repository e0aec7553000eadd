"""A child span of the current one, made only while the current span records: for steps
deep in a call (a shell call's analysis, a hook) that have no tracer of their own. With
tracing off it costs one ``is_recording`` test."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.trace import Span, StatusCode, get_current_span
from opentelemetry.util.types import AttributeValue

from corral.tracing.conventions import Attr
from corral.tracing.tracers import tracer

__all__ = ["child_span"]


@contextmanager
def child_span(name: str, attributes: Mapping[str, AttributeValue]) -> Iterator[Span | None]:
    """The span (current inside the block), or None when nothing records; an exception
    marks it failed with its type."""
    if not get_current_span().is_recording():
        yield None
        return
    traced = tracer()
    if traced is None:
        yield None
        return
    with traced.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except Exception as exc:
            span.set_attribute(Attr.ERROR_TYPE, type(exc).__name__)
            span.set_status(StatusCode.ERROR, str(exc)[:500])
            raise
