"""Which tracer the platform uses, decided once when a platform is built.

The OpenTelemetry API's global provider stays a proxy until an SDK sets a real one; while
it is, and while no provider is given to :func:`use_provider`, :func:`tracer` answers None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

__all__ = [
    "LOCAL_EXPORTER",
    "configure_from_environment",
    "content_recorded",
    "sdk_provider",
    "tracer",
    "use_provider",
]

SCOPE = "corral"
"""The instrumentation scope name of every span Corral emits."""

LOCAL_EXPORTER = "corral"
"""The ``OTEL_TRACES_EXPORTER`` name that traces into the local trace store only."""

_override: trace.TracerProvider | None = None


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Trace the platforms built from now on with ``provider`` instead of the global one
    (None: the global one again). For embedding and tests, which must not set the global
    provider more than once per process."""
    global _override
    _override = provider


def _provider() -> trace.TracerProvider | None:
    provider = _override if _override is not None else trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider


def tracer() -> trace.Tracer | None:
    """The tracer for a platform being built now; None when nothing would record spans."""
    provider = _provider()
    return None if provider is None else provider.get_tracer(SCOPE)


def sdk_provider() -> Any | None:
    """The provider of :func:`tracer` when it takes span processors (the SDK's); None
    otherwise. The local trace store adds its processor there."""
    provider = _provider()
    return provider if hasattr(provider, "add_span_processor") else None


def content_recorded(live: Mapping[str, Any]) -> bool:
    """Whether an admin turned on recording prompts, tool arguments and results."""
    return bool(live.get("trace_content", False))


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Set the global provider from the standard ``OTEL_*`` variables when the SDK is
    installed (``corral[otel]``) and an exporter is named or an OTLP endpoint given;
    whether it did. ``OTEL_TRACES_EXPORTER`` is a comma-separated list: ``otlp``,
    ``console`` and ``corral`` (the local trace store only, which every traced platform
    writes anyway); ``none`` or ``OTEL_SDK_DISABLED=true`` keeps tracing off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    names = {n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()}
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if "none" in names or (not names and not endpoint):
        return False
    if not names:
        names = {"otlp"}
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        return False
    named = "OTEL_SERVICE_NAME" in env or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": "corral"}))
    if "console" in names:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    if names - {"console", LOCAL_EXPORTER}:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            return False
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True
