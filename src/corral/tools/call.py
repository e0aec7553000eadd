"""One tool call as it passes the pipeline: the request, the configuration it reads, and
:class:`ToolCall`, the mutable record each stage reads and fills in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from corral.errors import ToolError
from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.policy.sources import SourcePolicy
from corral.secrets import Redactor
from corral.tools.context import CallContext, Cancellation, Narrowing, OutputSink
from corral.tools.findings import Findings
from corral.tools.registry import LoadedTool
from corral.tools.selection import AgentSelection
from corral.tools.services import Services

__all__ = ["CallRequest", "DispatchState", "StateProvider", "ToolCall"]


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


class ToolCall:
    """One call on its way through the stages.

    ``arguments`` start as the request's and may be replaced by a stage (the grants stage
    drops ignored arguments; a package stage may rewrite them for the stages after it).
    ``tool`` is set by the ``visibility`` stage, ``context`` by the ``context`` stage; a
    stage placed before them that reads them gets a :class:`~corral.errors.ToolError`
    naming the order. ``notes`` are appended to the handler's result; ``findings`` is the
    same object the handler sees as ``ctx.findings``.
    """

    __slots__ = (
        "approved",
        "arguments",
        "cancellation",
        "context",
        "findings",
        "notes",
        "request",
        "started",
        "state",
        "tool",
        "traced_ns",
    )

    tool: LoadedTool
    """The resolved tool (set by the ``visibility`` stage)."""
    context: CallContext
    """The handler's context (set by the ``context`` stage)."""
    traced_ns: int
    """Traced chains only (:mod:`corral.tools.stage_spans`): how long the stage just left
    took, rest of the chain included; -1 while the next stage has not been entered."""

    def __init__(
        self,
        request: CallRequest,
        state: DispatchState,
        *,
        approved: bool,
        cancellation: Cancellation,
        started: float,
    ) -> None:
        self.request = request
        self.state = state
        self.approved = approved
        """A person approved this call after it waited: the approval stage lets it pass."""
        self.cancellation = cancellation
        self.started = started
        """``time.perf_counter()`` when the call entered the pipeline."""
        self.arguments: Any = request.arguments
        self.notes: list[str] = []
        self.findings = Findings()

    if not TYPE_CHECKING:  # hidden from mypy, which would then accept any attribute name

        def __getattr__(self, name: str) -> Any:
            # Only reached for a slot not set yet: a stage placed before the one that sets it.
            setter = _SET_BY.get(name)
            if setter is None:
                raise AttributeError(name)
            raise ToolError(
                f"a pipeline stage read the call's {name} before the {setter!r} stage set "
                f"it; the package that added the stage must place it after {setter!r}",
                code="pipeline_order",
            )


_SET_BY = {"tool": "visibility", "context": "context"}
