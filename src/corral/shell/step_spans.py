"""Spans of a shell call's own steps inside its ``execute_tool execute`` span: ``shell
analysis`` (the command analysis), ``shell gate`` (the URI-policy gate) and ``shell spawn``
(starting the process), each with its outcome.

Only while the current span records (the platform traces and a call's span is current):
otherwise one ``is_recording`` test and nothing else. The analysis and the gate run in a
worker thread, which inherits the call's context (``asyncio.to_thread`` copies it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.trace import Span, StatusCode

from corral.shell.verdict import Verdict
from corral.tracing import Attr
from corral.tracing.children import child_span

__all__ = ["note_spawn", "note_verdict", "step_span"]


@contextmanager
def step_span(step: str) -> Iterator[Span | None]:
    """The span of ``step`` (None when nothing records); an exception marks it failed."""
    with child_span(f"shell {step}", {Attr.SHELL_STEP: step}) as span:
        yield span


def note_verdict(span: Span | None, verdict: Verdict | None) -> None:
    """The step's outcome: allowed, or refused with the guard's rule."""
    if span is None:
        return
    if verdict is None or verdict.allowed:
        span.set_attribute(Attr.SHELL_OUTCOME, "allowed")
        return
    span.set_attribute(Attr.SHELL_OUTCOME, "refused")
    span.set_attribute(Attr.SHELL_RULE, verdict.rule or "")
    span.set_status(StatusCode.ERROR, (verdict.detail or "")[:500])


def note_spawn(span: Span | None, plane: str, confinement: str) -> None:
    """Where the process started."""
    if span is not None:
        span.set_attribute(Attr.SHELL_PLANE, plane)
        span.set_attribute(Attr.SHELL_CONFINEMENT, confinement)
