"""Trace context that leaves the process: a W3C ``traceparent`` stored with a run or put in
a subprocess's ``TRACEPARENT`` variable, and read back.

MCP needs nothing here: the MCP SDK puts the current context in an outgoing request's
``_meta`` and continues an incoming one in a server span of its own, the parent of the
call's ``execute_tool`` span.

Only the API is used; with tracing off the current span is invalid and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from opentelemetry.context import Context
from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = [
    "ENV_VAR",
    "HEADER",
    "context_of",
    "current_traceparent",
    "traced_variables",
    "with_traceparent",
]

HEADER = "traceparent"
"""The W3C header name."""

ENV_VAR = "TRACEPARENT"
"""The environment variable carrying it to a subprocess (the OTel environment carrier)."""

_W3C = TraceContextTextMapPropagator()


def current_traceparent() -> str | None:
    """The ``traceparent`` of the current span; None when there is no valid one."""
    if not get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier.get(HEADER)


def context_of(traceparent: str | None) -> Context:
    """A context whose parent is ``traceparent``; an empty one (a new root) when it is
    missing or malformed."""
    if not traceparent:
        return Context()
    return _W3C.extract({HEADER: traceparent}, context=Context())


def with_traceparent(carrier: MutableMapping[str, str], key: str = HEADER) -> None:
    """Add the current span's ``traceparent`` to ``carrier`` under ``key`` (nothing when
    there is no current span)."""
    traceparent = current_traceparent()
    if traceparent is not None:
        carrier[key] = traceparent


def traced_variables(variables: Mapping[str, str]) -> Mapping[str, str]:
    """A subprocess's platform variables with ``TRACEPARENT`` added when a span is current
    (a hook's or a command's tools can then continue the trace); unchanged otherwise."""
    traceparent = current_traceparent()
    if traceparent is None:
        return variables
    return {**variables, ENV_VAR: traceparent}
