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
        self, call: ToolCall, started: int, ended: int, decision: str, code: str | None = None
    ) -> None:
        attributes = {Attr.STAGE: self._name, Attr.STAGE_DECISION: decision}
        if code is not None:
            attributes[Attr.STAGE_CODE] = code
        span = self._tracer.start_span(
            SPAN_PREFIX + self._name, start_time=started, attributes=attributes
        )
        if code is not None:
            span.set_status(StatusCode.ERROR, code)
        span.end(end_time=ended)

    def passed(
        self, call: ToolCall, started: int, ended: int, own: int, decision: str = "passed"
    ) -> None:
        """A routine decision (passed, or the handler ran): a span only if notable by its
        ``own`` time or when every stage gets one. Called on every stage of every traced
        call, so the cheap test comes first."""
        if own >= _NOTABLE_NS or call.state.live.get("trace_stages") == "all":
            self.record(call, started, ended, decision)


class _TracedStage:
    """A middleware stage, its ``next`` the rest of the traced chain itself. Whether the
    stage called it, and how long the rest took, is what the next stage (or
    :func:`_traced_end`) leaves in :attr:`ToolCall.traced_ns`: no object or frame per
    stage and call besides the stage's own."""

    __slots__ = ("_name", "_rest", "_spans", "_stage")

    def __init__(self, stage: Stage, rest: Next, tracer: Tracer) -> None:
        self._stage = stage
        self._name = stage.name
        self._rest = rest
        self._spans = _Spans(stage.name, tracer)

    async def __call__(self, call: ToolCall) -> ToolResult:
        started = time_ns()
        call.traced_ns = -1
        try:
            result = await self._stage(call, self._rest)
        except ToolError as error:
            ended = time_ns()
            inner = call.traced_ns
            call.traced_ns = ended - started
            if inner >= 0:
                self._spans.passed(call, started, ended, ended - started - inner)
            else:
                self._spans.record(call, started, ended, "refused", error.code)
            raise
        except BaseException:
            call.traced_ns = time_ns() - started
            raise
        ended = time_ns()
        inner = call.traced_ns
        call.traced_ns = ended - started
        if inner >= 0:
            self._spans.passed(call, started, ended, ended - started - inner)
        else:
            decision = _decision(self._name, result)
            if decision == "ran":
                self._spans.passed(call, started, ended, ended - started, "ran")
            else:
                failed = decision in ("refused", "failed")
                code = (result.error_code or "tool_error") if failed else None
                self._spans.record(call, started, ended, decision, code)
        return result


class _TracedEntering:
    """Consecutive entry stages (sync ``enter``), then the rest: one frame for all of them,
    as in the untraced chain; each entry is timed on its own."""

    __slots__ = ("_entries", "_rest")

    def __init__(
        self, entries: Sequence[tuple[Callable[[ToolCall], None], _Spans]], rest: Next
    ) -> None:
        self._entries = tuple(entries)
        self._rest = rest

    async def __call__(self, call: ToolCall) -> ToolResult:
        outer = time_ns()
        started = outer
        for enter, spans in self._entries:
            try:
                enter(call)
            except ToolError as error:
                ended = time_ns()
                call.traced_ns = ended - outer
                spans.record(call, started, ended, "refused", error.code)
                raise
            ended = time_ns()
            spans.passed(call, started, ended, ended - started)
            started = ended
        try:
            return await self._rest(call)
        finally:
            call.traced_ns = time_ns() - outer


async def _traced_end(call: ToolCall) -> ToolResult:
    call.traced_ns = 0
    return await _end(call)


async def _end(call: ToolCall) -> ToolResult:
    return ToolResult.text_result(
        f"no pipeline stage answered the call to {call.request.tool!r}",
        is_error=True,
        error_code="pipeline_order",
    )


def compose_traced(stages: Sequence[Stage], tracer: Tracer) -> Next:
    """Like :func:`~corral.tools.stages.compose`, each stage timed for its span."""
    chain: Next = _traced_end
    entering: list[tuple[Callable[[ToolCall], None], _Spans]] = []
    for stage in reversed(stages):
        enter = getattr(stage, "enter", None)
        if callable(enter):
            entering.insert(0, (enter, _Spans(stage.name, tracer)))
            continue
        if entering:
            chain, entering = _TracedEntering(entering, chain), []
        chain = _TracedStage(stage, chain, tracer)
    return _TracedEntering(entering, chain) if entering else chain
