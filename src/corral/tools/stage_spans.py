"""The pipeline traced: a span per stage inside the call's ``execute_tool`` span.

Built only while a tracer records (:func:`corral.tracing.tracer`); the untraced chain of
:func:`corral.tools.stages.compose` stays as it is. A stage's span is made after the stage
is done, from the times taken around it, as a child of the call's span (stage spans never
become current: what the handler starts, a delegate's run or an MCP call, is a child of
``execute_tool``). A middleware stage's span covers the stages after it too; an entry
stage's (sync ``enter``) covers only itself.

Each span says the stage's decision (:attr:`~corral.tracing.Attr.STAGE_DECISION`):

- ``passed``: the stage let the call go on to the next one;
- ``refused``: it refused the call (raised, or answered with an error result itself);
- ``parked``: it answered with a wait (approval);
- ``answered``: it answered itself without an error (a cached or hook-given result);
- ``ran`` / ``failed``: the handler stage ran the tool, which succeeded / answered an error.

An SDK span costs microseconds, a dozen per call more than a fast tool takes, so by
default (live setting ``trace_stages`` = ``notable``) only the stages worth a look get one:
any that did not pass the call on (or the handler that failed), and any that took
:data:`NOTABLE_MS` or more of its own (a wait in approval, a slow analysis, the handler of a
slow tool); a middleware stage's own time leaves out the stages after it, so a slow handler
does not make every stage wrapping it notable. ``all`` gives every stage one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import time_ns

from opentelemetry.trace import StatusCode, Tracer

from corral.errors import ToolError
from corral.tools.call import ToolCall
from corral.tools.results import ToolResult
from corral.tools.stages import Next, Stage
from corral.tracing import Attr

__all__ = ["NOTABLE_MS", "compose_traced"]

SPAN_PREFIX = "stage "
"""Stage spans are named ``stage {name}``."""

NOTABLE_MS = 1.0
"""A passing stage gets a span under ``trace_stages = notable`` from this duration on."""

_NOTABLE_NS = int(NOTABLE_MS * 1_000_000)

HANDLER = "handler"

_ROUTINE = frozenset({"passed", "ran"})


def _decision(stage: str, result: ToolResult) -> str:
    if result.waiting is not None:
        return "parked"
    if stage == HANDLER:
        return "failed" if result.is_error else "ran"
    return "refused" if result.is_error else "answered"


class _Spans:
    __slots__ = ("_name", "_tracer")

    def __init__(self, name: str, tracer: Tracer) -> None:
        self._name = name
        self._tracer = tracer

    def record(
        self,
        call: ToolCall,
        started: int,
        decision: str,
        code: str | None = None,
        *,
        inner: int = 0,
    ) -> None:
        """``inner``: nanoseconds the stage spent in the stages after it, which are not its
        own time (a slow handler makes no stage wrapping it notable)."""
        ended = time_ns()
        if (
            decision in _ROUTINE
            and ended - started - inner < _NOTABLE_NS
            and call.state.live.get("trace_stages") != "all"
        ):
            return
        attributes = {Attr.STAGE: self._name, Attr.STAGE_DECISION: decision}
        if code is not None:
            attributes[Attr.STAGE_CODE] = code
        span = self._tracer.start_span(
            SPAN_PREFIX + self._name, start_time=started, attributes=attributes
        )
        if code is not None:
            span.set_status(StatusCode.ERROR, code)
        span.end(end_time=ended)


class _PassMark:
    """The rest of the chain as one stage's ``next``: notes that the stage called it."""

    __slots__ = ("_rest", "inner", "passed")

    def __init__(self, rest: Next) -> None:
        self._rest = rest
        self.passed = False
        self.inner = 0
        """Nanoseconds spent in the rest of the chain."""

    async def __call__(self, call: ToolCall) -> ToolResult:
        self.passed = True
        entered = time_ns()
        try:
            return await self._rest(call)
        finally:
            self.inner += time_ns() - entered


class _TracedStage:
    __slots__ = ("_name", "_rest", "_spans", "_stage")

    def __init__(self, stage: Stage, rest: Next, tracer: Tracer) -> None:
        self._stage = stage
        self._name = stage.name
        self._rest = rest
        self._spans = _Spans(stage.name, tracer)

    async def __call__(self, call: ToolCall) -> ToolResult:
        started = time_ns()
        mark = _PassMark(self._rest)
        try:
            result = await self._stage(call, mark)
        except ToolError as error:
            if mark.passed:
                self._spans.record(call, started, "passed", inner=mark.inner)
            else:
                self._spans.record(call, started, "refused", error.code)
            raise
        if mark.passed:
            self._spans.record(call, started, "passed", inner=mark.inner)
        else:
            decision = _decision(self._name, result)
            failed = decision in ("refused", "failed")
            code = (result.error_code or "tool_error") if failed else None
            self._spans.record(call, started, decision, code)
        return result


class _TracedEntry:
    __slots__ = ("_enter", "_rest", "_spans")

    def __init__(
        self, name: str, enter: Callable[[ToolCall], None], rest: Next, tracer: Tracer
    ) -> None:
        self._enter = enter
        self._rest = rest
        self._spans = _Spans(name, tracer)

    async def __call__(self, call: ToolCall) -> ToolResult:
        started = time_ns()
        try:
            self._enter(call)
        except ToolError as error:
            self._spans.record(call, started, "refused", error.code)
            raise
        self._spans.record(call, started, "passed")
        return await self._rest(call)


async def _end(call: ToolCall) -> ToolResult:
    return ToolResult.text_result(
        f"no pipeline stage answered the call to {call.request.tool!r}",
        is_error=True,
        error_code="pipeline_order",
    )


def compose_traced(stages: Sequence[Stage], tracer: Tracer) -> Next:
    """Like :func:`~corral.tools.stages.compose`, each stage timed for its span."""
    chain: Next = _end
    for stage in reversed(stages):
        enter = getattr(stage, "enter", None)
        if callable(enter):
            chain = _TracedEntry(stage.name, enter, chain, tracer)
        else:
            chain = _TracedStage(stage, chain, tracer)
    return chain
