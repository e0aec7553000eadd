"""Which tracer the platform uses, decided once when a platform is built.

The OpenTelemetry API's global provider stays a proxy until an SDK sets a real one; while
it is, and while no provider is given to :func:`use_provider`, :func:`tracer` answers None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

__all__ = ["configure_from_environment", "content_recorded", "tracer", "use_provider"]

SCOPE = "corral"
"""The instrumentation scope name of every span Corral emits."""

_override: trace.TracerProvider | None = None


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Trace the platforms built from now on with ``provider`` instead of the global one
    (None: the global one again). For embedding and tests, which must not set the global
    provider more than once per process."""
    global _override
    _override = provider


def tracer() -> trace.Tracer | None:
    """The tracer for a platform being built now; None when nothing would record spans."""
    provider = _override if _override is not None else trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer(SCOPE)


def content_recorded(live: Mapping[str, Any]) -> bool:
    """Whether an admin turned on recording prompts, tool arguments and results."""
    return bool(live.get("trace_content", False))


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Set the global provider from the standard ``OTEL_*`` variables when the SDK is
    installed (``corral[otel]``) and an exporter is named or an OTLP endpoint given;
    whether it did. ``OTEL_SDK_DISABLED=true`` keeps tracing off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "")
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if exporter in ("", "none") and not endpoint:
        return False
    if exporter == "none":
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        return False
    named = "OTEL_SERVICE_NAME" in env or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": "corral"}))
    if exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            return False
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True
