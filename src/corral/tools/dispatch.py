"""The one dispatch pipeline every tool call passes: a list of stages.

:attr:`Dispatcher.built_in` lists them in order, outermost first. Each stage acts on the
way in in this order and on the way out in the reverse one, so the stages that work on the
result (slow-call records, shaping) come first and wrap the rest:

- ``slow_calls`` — a call taking at least ``perf_slow_tool_ms`` writes one ``perf.slow``
  record (never for a call cut short by Stop);
- ``shaping`` — refusals become error results; redaction and the tool result content cap;
- ``visibility`` — the tool must be in the caller's visible set for this run;
- ``validation`` — arguments against the tool's input schema (validators compiled once);
- ``grants`` — the tool's features and argument-level features;
- ``context`` — the handler's CallContext is built;
- ``policy`` — URI policies for path arguments, then the tool's own policy hook;
- ``approval`` — by permission profile and annotations; a call that needs it is parked as
  a durable record and resumed by the decision (``approved``);
- ``handler`` — runs with cancellation; Stop ends it.

Packages add stages at positions relative to these (:mod:`corral.tools.stages`); the list
is composed into one chain when it changes, never per call. A switched stage (one with
``engaged()``, such as the hooks stage) is in the chain only while it has work.

While a tracer records (:func:`corral.tracing.tracer`, decided when the dispatcher is
built), each call runs in an ``execute_tool`` span (:mod:`corral.tools.call_spans`) and the
chain is composed with a span per stage (:mod:`corral.tools.stage_spans`); otherwise neither
exists and a call pays one ``is None`` test.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from opentelemetry.trace import Tracer

from corral.errors import ToolError
from corral.policy.profiles import Profile
from corral.settings import Settings
from corral.tools.call import CallRequest, DispatchState, StateProvider, ToolCall
from corral.tools.call_spans import traced_call
from corral.tools.context import Cancellation
from corral.tools.registry import LoadedTool, Registry, same_tools
from corral.tools.results import ToolResult
from corral.tools.selection import Layer, Visibility
from corral.tools.stage_approval import Approval, ApprovalSink
from corral.tools.stage_context import BuildContext
from corral.tools.stage_grants import FeatureGates
from corral.tools.stage_handler import RunHandler
from corral.tools.stage_policy import PolicyCheck
from corral.tools.stage_shaping import ResultShaping
from corral.tools.stage_slow_calls import SlowCallRecords, SlowCallSink
from corral.tools.stage_spans import compose_traced
from corral.tools.stage_validation import ArgumentValidation
from corral.tools.stage_visibility import VisibilityCheck
from corral.tools.stages import (
    RECHECK_SECONDS,
    Stage,
    StageContribution,
    SwitchedStage,
    compose,
    is_switched,
    place,
)
from corral.tracing import tracer as current_tracer

__all__ = [
    "ApprovalSink",
    "CallRequest",
    "DispatchState",
    "Dispatcher",
    "SlowCallSink",
    "StateProvider",
]

STOP_GRACE_SECONDS = 5.0
"""How long a handler may take to wind down on its own after Stop before it is cancelled."""


def _stop_grace() -> float:
    return STOP_GRACE_SECONDS


class Dispatcher:
    """Runs tool calls through the pipeline's stages."""

    def __init__(
        self,
        *,
        registry: Registry,
        state: StateProvider,
        approvals: ApprovalSink,
        slow_calls: SlowCallSink,
        settings: Settings,
        tracer: Tracer | None = None,
    ) -> None:
        self.registry = registry
        self.tracer = tracer if tracer is not None else current_tracer()
        """The tracer of the calls' spans; None: no spans at all."""
        self._state = state
        self._visibility = VisibilityCheck(registry)
        self._shaping = ResultShaping(state)
        self._approval = Approval(approvals)
        self.built_in: tuple[Stage, ...] = (
            SlowCallRecords(slow_calls),
            self._shaping,
            self._visibility,
            ArgumentValidation(),
            FeatureGates(),
            BuildContext(settings),
            PolicyCheck(),
            self._approval,
            RunHandler(stop_grace=_stop_grace),
        )
        self._contributions: tuple[StageContribution, ...] = ()
        self.stages: tuple[Stage, ...] = self.built_in
        """Every stage in order, built-in and contributed."""
        self._switched: tuple[SwitchedStage, ...] = ()
        self._idle: frozenset[str] = frozenset()
        self._state_seen: DispatchState | None = None
        self._recheck_at = 0.0
        self._chain = self._composed()
        self._visible: tuple[tuple[Layer, ...], tuple[LoadedTool, ...], list[LoadedTool]] | None
        self._visible = None
        """The last visible set with the layers and tools it was found from."""

    def add_stages(self, contributions: Sequence[StageContribution]) -> None:
        """Place a package's stages; a :class:`~corral.tools.stages.StageError` names one
        that cannot be placed, and then none of them is."""
        joined = (*self._contributions, *contributions)
        stages = place(self.built_in, joined)
        self._contributions = joined
        self.stages = stages
        self._switched = tuple(s for s in stages if is_switched(s))
        self._idle = self._idle_now()
        self._chain = self._composed()

    def recheck_stages(self) -> None:
        """Ask the switched stages again before the next call (their work changed)."""
        self._recheck_at = 0.0

    @property
    def chained(self) -> tuple[Stage, ...]:
        """The stages a call passes now: every stage but the idle switched ones."""
        return tuple(s for s in self.stages if s.name not in self._idle)

    def _idle_now(self) -> frozenset[str]:
        return frozenset(s.name for s in self._switched if not s.engaged())

    def _composed(self) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        if self.tracer is not None:
            return compose_traced(self.chained, self.tracer)
        return compose(self.chained)

    def _recheck(self, state: DispatchState) -> None:
        self._state_seen = state
        self._recheck_at = time.monotonic() + RECHECK_SECONDS
        idle = self._idle_now()
        if idle != self._idle:
            self._idle = idle
            self._chain = self._composed()

    async def dispatch(self, request: CallRequest, *, approved: bool = False) -> ToolResult:
        """Run ``request`` through every stage; ``approved`` passes the approval stage after
        a person's decision (the other stages run again: rights may have changed)."""
        state = await self._state.dispatch_state()
        if self._switched and (
            state is not self._state_seen or time.monotonic() >= self._recheck_at
        ):
            self._recheck(state)
        call = ToolCall(
            request,
            state,
            approved=approved,
            cancellation=request.cancellation or Cancellation(),
            started=time.perf_counter(),
        )
        if self.tracer is not None:
            return await traced_call(self.tracer, self.registry, call, self._chain, self._refused)
        try:
            return await self._chain(call)
        except ToolError as error:  # from a package stage placed outside ``shaping``
            return await self._refused(call, error)

    async def _refused(self, call: ToolCall, error: ToolError) -> ToolResult:
        return await self._shaping.shape(call, ToolResult.from_error(error))

    def approval_required(self, tool: LoadedTool, profile: Profile) -> bool:
        """Whether ``profile`` asks a person before ``tool`` runs."""
        return self._approval.required(tool, profile)

    def visibility(self, request: CallRequest, state: DispatchState) -> Visibility:
        """The narrowing layers for this caller and run."""
        return self._visibility.visibility(request, state)

    def visible_tools(self, request: CallRequest, state: DispatchState) -> list[LoadedTool]:
        layers = self._visibility.layers(request, state)
        tools = tuple(self.registry.tools.values())
        # A run asks at every step, with equal layers (value objects: a layer's answers
        # follow from its fields) and the very same loaded tools; anything else filters again.
        kept = self._visible
        if kept is not None and kept[0] == layers and same_tools(kept[1], tools):
            return list(kept[2])
        visible = Visibility(layers).visible(tools)
        self._visible = (layers, tools, visible)
        return list(visible)

    def visible_tool(self, request: CallRequest, state: DispatchState) -> LoadedTool:
        """The tool ``request`` names, if this caller and run may call it (else a refusal)."""
        return self._visibility.visible_tool(request, state)
