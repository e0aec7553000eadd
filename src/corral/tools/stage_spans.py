"""The pipeline traced: one span per stage inside the call's ``execute_tool`` span.

Built only while a tracer records (:func:`corral.tracing.tracer`); the untraced chain of
:func:`corral.tools.stages.compose` stays as it is. An entry stage (sync ``enter``) gets a
span of its own around ``enter``; a middleware stage's span holds the stages after it, so
its own time is its span's duration less its child's. Each span says the stage's decision
(:attr:`~corral.tracing.Attr.STAGE_DECISION`):

- ``passed``: the stage let the call go on to the next one;
- ``refused``: it refused the call (raised, or answered with an error result itself);
- ``parked``: it answered with a wait (approval);
- ``answered``: it answered itself without an error (a cached or hook-given result).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.trace import Span, StatusCode, Tracer

from corral.errors import ToolError
from corral.tools.call import ToolCall
from corral.tools.results import ToolResult
from corral.tools.stages import Next, Stage
from corral.tracing import Attr

__all__ = ["compose_traced"]

SPAN_PREFIX = "stage "
"""Stage spans are named ``stage {name}``."""


def _refused(span: Span, error: ToolError) -> None:
    span.set_attribute(Attr.STAGE_DECISION, "refused")
    span.set_attribute(Attr.STAGE_CODE, error.code)
    span.set_status(StatusCode.ERROR, error.code)


def _answered(span: Span, result: ToolResult) -> None:
    if result.waiting is not None:
        span.set_attribute(Attr.STAGE_DECISION, "parked")
    elif result.is_error:
        span.set_attribute(Attr.STAGE_DECISION, "refused")
        span.set_attribute(Attr.STAGE_CODE, result.error_code or "tool_error")
    else:
        span.set_attribute(Attr.STAGE_DECISION, "answered")


class _PassMark:
    """The rest of the chain as one stage's ``next``: notes that the stage called it."""

    __slots__ = ("_rest", "passed")

    def __init__(self, rest: Next) -> None:
        self._rest = rest
        self.passed = False

    async def __call__(self, call: ToolCall) -> ToolResult:
        self.passed = True
        return await self._rest(call)


class _TracedStage:
    __slots__ = ("_name", "_rest", "_stage", "_tracer")

    def __init__(self, stage: Stage, rest: Next, tracer: Tracer) -> None:
        self._stage = stage
        self._name = stage.name
        self._rest = rest
        self._tracer = tracer

    async def __call__(self, call: ToolCall) -> ToolResult:
        with self._tracer.start_as_current_span(
            SPAN_PREFIX + self._name,
            attributes={Attr.STAGE: self._name},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            mark = _PassMark(self._rest)
            try:
                result = await self._stage(call, mark)
            except ToolError as error:
                if mark.passed:
                    span.set_attribute(Attr.STAGE_DECISION, "passed")
                else:
                    _refused(span, error)
                raise
            if mark.passed:
                span.set_attribute(Attr.STAGE_DECISION, "passed")
            else:
                _answered(span, result)
            return result


class _TracedEntry:
    __slots__ = ("_enter", "_name", "_rest", "_tracer")

    def __init__(
        self, name: str, enter: Callable[[ToolCall], None], rest: Next, tracer: Tracer
    ) -> None:
        self._name = name
        self._enter = enter
        self._rest = rest
        self._tracer = tracer

    async def __call__(self, call: ToolCall) -> ToolResult:
        with self._tracer.start_as_current_span(
            SPAN_PREFIX + self._name,
            attributes={Attr.STAGE: self._name},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                self._enter(call)
            except ToolError as error:
                _refused(span, error)
                raise
            span.set_attribute(Attr.STAGE_DECISION, "passed")
        return await self._rest(call)


async def _end(call: ToolCall) -> ToolResult:
    return ToolResult.text_result(
        f"no pipeline stage answered the call to {call.request.tool!r}",
        is_error=True,
        error_code="pipeline_order",
    )


def compose_traced(stages: Sequence[Stage], tracer: Tracer) -> Next:
    """Like :func:`~corral.tools.stages.compose`, each stage in a span of its own."""
    chain: Next = _end
    for stage in reversed(stages):
        enter = getattr(stage, "enter", None)
        if callable(enter):
            chain = _TracedEntry(stage.name, enter, chain, tracer)
        else:
            chain = _TracedStage(stage, chain, tracer)
    return chain
