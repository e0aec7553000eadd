"""OpenTelemetry spans for runs, model requests, tool calls and pipeline stages.

Only the ``opentelemetry-api`` package is needed; with no SDK configured (no tracer provider
set, or none given to :func:`use_provider`) :func:`tracer` answers None and the platform
builds its untraced paths, so tracing off costs one ``is None`` test per call. The SDK and
the OTLP exporter come with the ``corral[otel]`` extra (:func:`configure_from_environment`).
"""

from corral.tracing.conventions import Attr, Op
from corral.tracing.tracers import (
    configure_from_environment,
    content_recorded,
    tracer,
    use_provider,
)

__all__ = [
    "Attr",
    "Op",
    "configure_from_environment",
    "content_recorded",
    "tracer",
    "use_provider",
]
