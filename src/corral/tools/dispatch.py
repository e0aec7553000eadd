"""The one dispatch pipeline every tool call passes, in this order:

1. visibility — the tool must be in the caller's visible set for this run;
2. arguments — validated against the tool's input schema (validators compiled once);
3. feature gates — the tool's features and argument-level features;
4. policy — URI policies for path arguments, then the tool's own policy hook;
5. approval — by permission profile and annotations; a call that needs it is parked as a
   durable record and resumed by the decision;
6. handler — runs with cancellation; Stop ends it;
7. result shaping — redaction and the tool result content cap;
8. slow calls — a call taking at least ``perf_slow_tool_ms`` writes one ``perf.slow``
   record (never for a call cut short by Stop).

Steps 1 to 4 raise :class:`corral.errors.Refusal`; every refusal and handler error becomes an
error result the model can read and recover from.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jsonschema.exceptions import ValidationError

from corral.errors import FeatureMissing, InvalidArguments, NotVisible, ToolError
from corral.policy.identity import Caller
from corral.policy.profiles import Profile, needs_approval
from corral.policy.sources import SourcePolicy
from corral.secrets import Redactor
from corral.settings import Settings
from corral.tools.context import CallContext, Cancellation, Narrowing, OutputSink
from corral.tools.contract import ToolSpec, pointer
from corral.tools.handler_threads import run_in_thread
from corral.tools.registry import LoadedTool, Registry
from corral.tools.results import TextBlock, ToolResult, coerce_result, shape_result
from corral.tools.secret_arguments import split_secrets
from corral.tools.selection import (
    AgentSelection,
    ContextRules,
    FeatureGrants,
    Layer,
    PackageState,
    RunNarrowing,
    Visibility,
)
from corral.tools.services import Services
from corral.tools.validation import ArgumentValidator

__all__ = [
    "ApprovalSink",
    "CallRequest",
    "DispatchState",
    "Dispatcher",
    "SlowCallSink",
    "StateProvider",
]

log = logging.getLogger("corral.tools")
perf_log = logging.getLogger("corral.perf")

STOP_GRACE_SECONDS = 5.0
"""How long a handler may take to wind down on its own after Stop before it is cancelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchState:
    """Configuration the pipeline reads, refreshed by the platform when it changes."""

    live: Mapping[str, Any]
    disabled_packages: frozenset[str]
    agents: Mapping[str, AgentSelection]
    sources: SourcePolicy
    redactor: Redactor


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRequest:
    tool: str
    arguments: Any
    caller: Caller
    agent: str = "default"
    profile: Profile = "auto"
    run_id: str | None = None
    conversation_id: str | None = None
    call_id: str | None = None
    narrowing: Narrowing = field(default_factory=Narrowing)
    cancellation: Cancellation | None = None
    output: OutputSink | None = None
    services: Services = field(default_factory=Services)


class StateProvider(Protocol):
    async def dispatch_state(self) -> DispatchState: ...


class ApprovalSink(Protocol):
    async def park(
        self,
        request: CallRequest,
        arguments: dict[str, Any],
        reason: str,
        *,
        secrets: dict[str, Any] | None = None,
    ) -> str:
        """Store a pending approval durably and return its id; ``secrets`` (taken out of
        ``arguments``) are kept sealed, never readable in the record."""
        ...


class SlowCallSink(Protocol):
    async def record_slow(
        self, *, tool: str, duration_ms: float, failed: bool, run_id: str | None
    ) -> None: ...


class Dispatcher:
    """Runs tool calls through the pipeline."""

    def __init__(
        self,
        *,
        registry: Registry,
        state: StateProvider,
        approvals: ApprovalSink,
        slow_calls: SlowCallSink,
        settings: Settings,
    ) -> None:
        self.registry = registry
        self._state = state
        self._approvals = approvals
        self._slow_calls = slow_calls
        self._settings = settings
        self._validators: dict[str, tuple[ToolSpec, ArgumentValidator]] = {}
        # The layers that depend only on the config snapshot, per agent; rebuilt when the
        # snapshot object changes (the config cache hands out a new one on every change).
        self._snapshot_layers: tuple[DispatchState | None, dict[str, tuple[Layer, Layer]]] = (
            None,
            {},
        )

    # -- the pipeline ---------------------------------------------------------------------

    async def dispatch(self, request: CallRequest, *, approved: bool = False) -> ToolResult:
        """Run ``request`` through every step; ``approved`` skips step 5 after a decision."""
        state = await self._state.dispatch_state()
        cancellation = request.cancellation or Cancellation()
        started = time.perf_counter()
        try:
            tool = self.visible_tool(request, state)
            arguments = self.validate_arguments(tool, request.arguments)
            arguments, notes = self.apply_feature_gates(tool, arguments, request.caller)
            ctx = self._context(request, tool, state, cancellation, notes)
            await self.check_policy(tool, arguments, ctx)
            if not approved and self.approval_required(tool, request.profile):
                return await self.park(request, tool, arguments)
            result = await self.run_handler(tool, arguments, ctx)
            if notes:
                result.content.append(_note_block(notes))
        except ToolError as error:
            result = ToolResult.from_error(error)
        # Read the redactor again: the handler may have read a stored credential this process
        # had not seen, and that value must not reach this very result.
        redactor = (await self._state.dispatch_state()).redactor
        shaped = shape_result(
            result, cap=int(state.live["tool_result_content_cap"]), redact=redactor
        )
        await self.record_if_slow(request, started, shaped, cancellation, state)
        return shaped

    def visible_tool(self, request: CallRequest, state: DispatchState) -> LoadedTool:
        """Step 1: the tool exists and every narrowing layer admits it."""
        tool = self.registry.tools.get(request.tool)
        if tool is None:
            raise NotVisible(
                f"no tool named {request.tool!r} is available; call one of the tools listed "
                "in your tool list",
                data={"tool": request.tool},
            )
        for layer in self.visibility(request, state).layers:
            reason = layer.refusal(tool)
            if reason is None:
                continue
            error = FeatureMissing if isinstance(layer, FeatureGrants) else NotVisible
            raise error(
                f"tool {request.tool!r} is not available here: {reason}; "
                "use a tool from your tool list instead",
                data={"tool": request.tool, "reason": reason},
            )
        return tool

    def validate_arguments(self, tool: LoadedTool, arguments: Any) -> dict[str, Any]:
        """Step 2: arguments must match the input schema."""
        if not isinstance(arguments, dict):
            raise InvalidArguments(
                f"arguments to {tool.name!r} must be a JSON object, not {type(arguments).__name__}"
            )
        # Keyed by the spec itself too: an MCP server that reconnects may change a schema.
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool.spec:
            cached = (tool.spec, ArgumentValidator(tool.spec.input_schema))
            self._validators[tool.name] = cached
        errors = cached[1].errors(arguments)
        if errors:
            problems = [_describe_validation_error(e) for e in errors[:5]]
            more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
            raise InvalidArguments(
                f"invalid arguments for {tool.name!r}: "
                + "; ".join(p for _, p in problems)
                + more
                + ". Fix these and call again.",
                data={"errors": [{"pointer": at, "message": msg} for at, msg in problems]},
            )
        return arguments

    def apply_feature_gates(
        self, tool: LoadedTool, arguments: dict[str, Any], caller: Caller
    ) -> tuple[dict[str, Any], list[str]]:
        """Step 3: tool-level and argument-level feature grants."""
        missing = caller.grants.missing(tool.spec.features)
        if missing:
            raise FeatureMissing(
                f"tool {tool.name!r} needs feature {', '.join(map(repr, missing))}, which "
                f"role {caller.role!r} lacks; ask an administrator for it",
                data={"features": missing},
            )
        notes: list[str] = []
        for gate in tool.spec.argument_features:
            parts = gate.pointer.strip("/").split("/")
            if not _has_pointer(arguments, parts):
                continue
            lacking = caller.grants.missing(gate.features)
            if not lacking:
                continue
            name = gate.pointer.lstrip("/")
            needed = ", ".join(map(repr, lacking))
            if gate.when_missing == "refuse":
                raise FeatureMissing(
                    f"argument {name!r} of {tool.name!r} needs feature {needed}, which role "
                    f"{caller.role!r} lacks; call again without {name!r} or ask an "
                    "administrator for the feature",
                    data={"pointer": gate.pointer, "features": lacking},
                )
            if not notes:
                arguments = copy.deepcopy(arguments)
            _delete_pointer(arguments, parts)
            notes.append(
                gate.note
                or f"argument {name!r} was ignored: it needs feature {needed}, which role "
                f"{caller.role!r} lacks"
            )
        return arguments, notes

    async def check_policy(
        self, tool: LoadedTool, arguments: dict[str, Any], ctx: CallContext
    ) -> None:
        """Step 4: URI policies for declared path arguments, then the tool's own hook."""
        for declared in tool.spec.path_arguments:
            value = _get_pointer(arguments, declared.pointer.strip("/").split("/"))
            targets = value if isinstance(value, list) else [value]
            for target in targets:
                if isinstance(target, str):
                    ctx.sources.check(ctx.caller, target, declared.access)
        if tool.policy_hook is not None:
            outcome = tool.policy_hook(arguments, ctx)
            if asyncio.iscoroutine(outcome):
                await outcome

    def approval_required(self, tool: LoadedTool, profile: Profile) -> bool:
        """Step 5's question: does this profile ask before this tool runs?"""
        return needs_approval(
            profile,
            tool.spec.approval,
            read_only=tool.spec.annotations.read_only,
            destructive=tool.spec.annotations.destructive,
        )

    async def park(
        self, request: CallRequest, tool: LoadedTool, arguments: dict[str, Any]
    ) -> ToolResult:
        """Step 5: store a pending approval; nothing is held open while it waits."""
        reason = f"{tool.name!r} needs approval under the {request.profile!r} profile " + (
            "(it always asks)" if tool.spec.approval == "always" else "(it can change things)"
        )
        redacted, secrets = split_secrets(arguments, tool.spec.secret_arguments)
        approval_id = await self._approvals.park(request, redacted, reason, secrets=secrets)
        return ToolResult.wait_for(
            "approval",
            approval_id,
            f"Waiting for approval {approval_id}: {reason}. The call runs once a person "
            "approves it and is refused if they deny it.",
            is_error=True,
            error_code="approval_pending",
            data={"approval_id": approval_id, "tool": tool.name, "reason": reason},
        )

    async def run_handler(
        self, tool: LoadedTool, arguments: dict[str, Any], ctx: CallContext
    ) -> ToolResult:
        """Step 6: the handler, cancellable by Stop."""
        cancellation = ctx.cancellation
        if cancellation.cancelled:
            return _stopped_result(tool.name)
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        timer: list[asyncio.TimerHandle] = []
        fired: list[bool] = []

        def cancel_now() -> None:
            fired.append(True)
            if current is not None:
                current.cancel()

        # Stop gives the handler a grace period to wind down, then cancels this very task:
        # the handler is awaited directly, not in a task of its own (a task costs a loop turn).
        unregister = cancellation.on_cancel(
            lambda: timer.append(loop.call_later(STOP_GRACE_SECONDS, cancel_now))
        )
        try:
            if tool.is_async:
                value = await tool.handler(arguments, ctx)
            elif tool.spec.blocking:
                value = await run_in_thread(tool.handler, arguments, ctx)
            else:
                value = tool.handler(arguments, ctx)
        except asyncio.CancelledError:
            if current is None or not fired:
                raise
            fired.clear()
            if current.uncancel() > 0:
                raise  # the caller is being cancelled too
            return _stopped_result(tool.name)
        except ToolError as error:
            return ToolResult.from_error(error)
        except Exception as exc:
            log.exception("tool %r failed", tool.name)
            return ToolResult.from_error(
                ToolError(
                    f"the tool {tool.name!r} failed unexpectedly: {type(exc).__name__}: {exc}",
                    code="tool_failed",
                )
            )
        finally:
            unregister()
            for handle in timer:
                handle.cancel()
            if fired and current is not None:
                current.uncancel()  # the handler swallowed our cancel and returned anyway
        result = coerce_result(value)
        if cancellation.cancelled and result.status == "ok":
            result.status = "stopped"
        return result

    async def record_if_slow(
        self,
        request: CallRequest,
        started: float,
        result: ToolResult,
        cancellation: Cancellation,
        state: DispatchState,
    ) -> None:
        """Step 8: one perf.slow record for a slow call; none for a call cut short by Stop."""
        if cancellation.cancelled or result.status in ("stopped", "pending"):
            return
        duration_ms = (time.perf_counter() - started) * 1000
        if duration_ms < float(state.live["perf_slow_tool_ms"]):
            return
        perf_log.warning(
            "perf.slow tool=%s duration_ms=%.0f failed=%s",
            request.tool,
            duration_ms,
            result.is_error,
        )
        await self._slow_calls.record_slow(
            tool=request.tool,
            duration_ms=round(duration_ms, 1),
            failed=result.is_error,
            run_id=request.run_id,
        )

    # -- helpers ----------------------------------------------------------------------------

    def visibility(self, request: CallRequest, state: DispatchState) -> Visibility:
        caller = request.caller
        package_state, selection = self._layers_of_snapshot(state, request.agent)
        return Visibility(
            (
                package_state,
                FeatureGrants(caller.grants, caller.role),
                selection,
                RunNarrowing(request.narrowing),
                ContextRules(request.narrowing.subagent),
            )
        )

    def _layers_of_snapshot(self, state: DispatchState, agent: str) -> tuple[Layer, Layer]:
        cached_state, by_agent = self._snapshot_layers
        if cached_state is not state:
            by_agent = {}
            self._snapshot_layers = (state, by_agent)
        layers = by_agent.get(agent)
        if layers is None:
            selection = state.agents.get(agent) or AgentSelection(agent=agent, mode="all")
            layers = (PackageState(state.disabled_packages), selection)
            by_agent[agent] = layers
        return layers

    def visible_tools(self, request: CallRequest, state: DispatchState) -> list[LoadedTool]:
        return self.visibility(request, state).visible(self.registry.tools.values())

    def _context(
        self,
        request: CallRequest,
        tool: LoadedTool,
        state: DispatchState,
        cancellation: Cancellation,
        notes: list[str],
    ) -> CallContext:
        ctx = CallContext(
            tool=tool.name,
            call_id=request.call_id or uuid.uuid4().hex,
            caller=request.caller,
            agent=request.agent,
            profile=request.profile,
            run_id=request.run_id,
            conversation_id=request.conversation_id,
            narrowing=request.narrowing,
            live=state.live,
            settings=self._settings,
            sources=state.sources,
            cancellation=cancellation,
            notes=notes,
            services=request.services,
        )
        if request.output is not None:
            ctx.output = request.output
        return ctx


def _describe_validation_error(error: ValidationError) -> tuple[str, str]:
    path = list(error.absolute_path)
    required = error.validator_value
    if error.validator == "required" and isinstance(error.instance, dict):
        absent = (
            [r for r in required if r not in error.instance] if isinstance(required, list) else []
        )
        if absent:
            at = pointer([*path, absent[0]])
            return at, f"{at}: required property {absent[0]!r} is missing"
    schema = error.schema
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = (
            set((schema.get("properties") or {}).keys()) if isinstance(schema, dict) else set()
        )
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            at = pointer([*path, extra[0]])
            known = ", ".join(sorted(allowed)) or "none"
            return at, f"{at}: unknown property {extra[0]!r} (known: {known})"
    at = pointer(path) or "/"
    return at, f"{at}: {bounded(error.message)}"


QUOTE_MAX = 300
"""Characters of a validation message kept: it may quote the offending value whole."""


def bounded(message: str) -> str:
    if len(message) <= QUOTE_MAX:
        return message
    return f"{message[:QUOTE_MAX]}… ({len(message) - QUOTE_MAX:,} more characters)"


def _get_pointer(document: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(document, dict) and part in document:
            document = document[part]
        elif isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        else:
            return None
    return document


def _has_pointer(document: Any, parts: list[str]) -> bool:
    parent = _get_pointer(document, parts[:-1])
    return isinstance(parent, dict) and parts[-1] in parent


def _delete_pointer(document: Any, parts: list[str]) -> None:
    parent = _get_pointer(document, parts[:-1])
    if isinstance(parent, dict):
        parent.pop(parts[-1], None)


def _note_block(notes: list[str]) -> TextBlock:
    return TextBlock("Note: " + " ".join(notes))


def _stopped_result(tool: str) -> ToolResult:
    return ToolResult.text_result(
        f"Stopped: the run was stopped before {tool!r} finished; nothing more was captured.",
        is_error=True,
        error_code="stopped",
        status="stopped",
    )
