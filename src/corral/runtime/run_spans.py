"""The run's spans: ``invoke_agent {agent}`` around a run's job, ``chat {model}`` around each
model request (GenAI conventions). The tool calls' ``execute_tool`` spans open inside the run
span because the calls' tasks inherit its context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer, get_current_span
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model

from corral.errors import NotFound
from corral.kernel.decisions import DecisionStore
from corral.runtime.endings import Outcome
from corral.runtime.runs import RunRecord
from corral.tracing import Attr, Op
from corral.tracing.propagation import context_of, current_traceparent

__all__ = [
    "PARKED",
    "RESUMED",
    "chat_span",
    "end_chat_span",
    "end_run_span",
    "resumed",
    "run_span",
    "trace_to_keep",
]

PARKED = "corral.run.parked"
"""The event ending the span of a run's job that parked: what it waits for."""

RESUMED = "corral.run.resumed"
"""The event, in the span of the job that resumed the run, of one decided wait: who decided
and how, before its call runs."""


@contextmanager
def run_span(tracer: Tracer, run: RunRecord) -> Iterator[Span]:
    """The span of one job of ``run`` (a parked run that resumes gets another), a child of
    the trace context stored with the run, in whatever process the job runs; a new root
    when the run has none (nothing traced queued it)."""
    with tracer.start_as_current_span(
        f"{Op.INVOKE_AGENT} {run.agent}",
        context=context_of(run.trace_parent),
        kind=SpanKind.INTERNAL,
        attributes={
            Attr.OPERATION: Op.INVOKE_AGENT,
            Attr.AGENT_NAME: run.agent,
            Attr.CONVERSATION_ID: run.conversation_id,
            Attr.REQUEST_MODEL: run.model,
            Attr.RUN_ID: run.id,
            Attr.RUN_KIND: run.kind,
        },
    ) as span:
        yield span


def trace_to_keep(run: RunRecord) -> str | None:
    """Inside the span of a run's first job: its traceparent, to store so that the run's
    later jobs (resumed, taken over) continue this trace; None when the run has one."""
    return None if run.trace_parent else current_traceparent()


def end_run_span(span: Span, outcome: Outcome) -> None:
    if outcome.waits:
        span.add_event(
            PARKED,
            {
                Attr.WAIT_KINDS: [w.kind for w in outcome.waits],
                Attr.WAIT_IDS: [w.id for w in outcome.waits],
                Attr.TOOL_CALL_ID: [w.call_id for w in outcome.waits],
            },
        )
    span.set_attribute(Attr.RUN_STATUS, outcome.status)
    if outcome.reason:
        span.set_attribute(Attr.RUN_REASON, outcome.reason)
    if outcome.status == "failed":
        span.set_attribute(Attr.ERROR_TYPE, outcome.reason or "error")
        span.set_status(StatusCode.ERROR, outcome.detail)


@contextmanager
def chat_span(tracer: Tracer, model: Model) -> Iterator[Span]:
    """The span of one model request; an exception marks it failed with its type."""
    name = model.model_name
    with tracer.start_as_current_span(
        f"{Op.CHAT} {name}",
        kind=SpanKind.CLIENT,
        attributes={
            Attr.OPERATION: Op.CHAT,
            Attr.PROVIDER: model.system,
            Attr.REQUEST_MODEL: name,
        },
    ) as span:
        try:
            yield span
        except Exception as exc:
            span.set_attribute(Attr.ERROR_TYPE, type(exc).__qualname__)
            raise


def end_chat_span(span: Span, response: ModelResponse) -> None:
    if response.model_name:
        span.set_attribute(Attr.RESPONSE_MODEL, response.model_name)
    if response.provider_response_id:
        span.set_attribute(Attr.RESPONSE_ID, response.provider_response_id)
    if response.finish_reason:
        span.set_attribute(Attr.FINISH_REASONS, [response.finish_reason])
    span.set_attribute(Attr.INPUT_TOKENS, response.usage.input_tokens)
    span.set_attribute(Attr.OUTPUT_TOKENS, response.usage.output_tokens)


async def resumed(
    decisions: DecisionStore,
    approval_id: str,
    call_id: str,
    status: str,
    decided_by: str | None,
) -> None:
    """Note on the current span (the resumed run's) that a person's decision let it go on:
    how, by whom and on which surface (read from the decision's row); nothing when tracing
    is off (the current span is then a non-recording one), so no read either."""
    span = get_current_span()
    if not span.is_recording():
        return
    try:
        surface = (await decisions.get(approval_id)).surface
    except NotFound:
        surface = None
    span.add_event(
        RESUMED,
        {
            Attr.WAIT_KINDS: ["approval"],
            Attr.WAIT_IDS: [approval_id],
            Attr.TOOL_CALL_ID: [call_id],
            Attr.DECISION: status,
            Attr.DECIDED_BY: decided_by or "",
            # Decisions stored before surfaces were recorded have none.
            Attr.DECISION_SURFACE: surface or "unknown",
        },
    )
