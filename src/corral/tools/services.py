"""The services a handler receives on ``ctx.services``: one frozen, typed object.

Each field is a Protocol, ``None`` when nothing provides it (a tool called from the CLI has
no conversation model; a platform without the runtime's questions has no ``questions``).
Packages provide services through their ``install`` hook (the built-in package provides
shells, web, questions, goals and compactions that way); the runtime adds what belongs to
one run (its conversation's model, the usage recorder). A service that is not one of the
fields below is provided in :attr:`Services.extra`, keyed by its type, and found with
:meth:`Services.get`::

    greeter = ctx.services.get(Greeter)   # a Greeter, or None
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from corral.errors import NotFound
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.service_protocols import (
    ConversationModel,
    CredentialLookup,
    ReportSink,
    UsageRecorder,
)
from corral.tools.cancellation import Cancellation
from corral.tools.narrowing import Narrowing
from corral.tools.results import ToolResult
from corral.tools.skill_binding import SkillActivator, SkillScope

if TYPE_CHECKING:
    # Type-only: handlers that never run a command should not load the command analyser.
    from corral.shell.background import BackgroundShells, ConversationAccess
    from corral.shell.check import CheckedCommand
    from corral.shell.checkpoints.keeper import CheckpointKeeper
    from corral.shell.live import LiveSink
    from corral.shell.records import ShellRecord, ShellStore
    from corral.shell.service import ShellOutcome, ShellRequest
    from corral.shell.verdict import Verdict
    from corral.web.fetch import Fetcher

__all__ = [
    "CallScope",
    "Compactor",
    "Deferred",
    "DelegateScope",
    "Delegator",
    "GoalKeeper",
    "QuestionAsker",
    "Services",
    "ServicesConflict",
    "Shells",
    "Web",
    "WorkflowKeeper",
    "service_key",
]

T = TypeVar("T")
OnCancel = Callable[[Callable[[], Any]], Callable[[], None]]
_KEYED = frozenset({"extra", "deferred"})
"""The fields holding services by kind rather than one service each."""


class CallScope(SkillScope, Protocol):
    """The part of a :class:`~corral.tools.context.CallContext` a service needs to know
    whose call it serves: who calls, in which run and conversation, and the call's id."""

    @property
    def call_id(self) -> str: ...


class DelegateScope(CallScope, Protocol):
    """What delegating needs to know of the call: its agent, its narrowing, its Stop."""

    @property
    def agent(self) -> str: ...
    @property
    def narrowing(self) -> Narrowing: ...
    @property
    def cancellation(self) -> Cancellation: ...


class Shells(Protocol):
    """Shell execution: both guards, foreground commands, background shells."""

    @property
    def background(self) -> BackgroundShells: ...
    @property
    def store(self) -> ShellStore: ...
    @property
    def checkpoints(self) -> CheckpointKeeper: ...

    async def check(
        self, command: str, *, cwd: str | None, caller: Caller, policy: SourcePolicy | None = None
    ) -> CheckedCommand: ...

    async def verdict(self, command: str, *, cwd: str | None, caller: Caller) -> Verdict: ...

    def check_env(self, env: Mapping[str, str]) -> None:
        """Refuse (PolicyDenied naming it) a variable the call's env may not set."""

    async def run(
        self, request: ShellRequest, *, on_cancel: OnCancel, live_sink: LiveSink
    ) -> ShellOutcome: ...

    async def start_background(self, request: ShellRequest) -> tuple[ShellRecord, list[str]]: ...


class Web(Protocol):
    """Web access under the administrator's live settings (public addresses only)."""

    def fetcher(self, live: Mapping[str, Any]) -> Fetcher: ...


class QuestionAsker(Protocol):
    """ask_question: store the questions and park the run until a person answers."""

    async def ask(self, questions: list[dict[str, Any]], ctx: CallScope, /) -> ToolResult: ...


class GoalKeeper(Protocol):
    """todos: the conversation's goal, acceptance conditions, loop bound and list."""

    async def todos(self, args: dict[str, Any], ctx: CallScope, /) -> ToolResult: ...


class Compactor(Protocol):
    """compact_history: a reversible trim of what the model reads of earlier rows."""

    async def compact(self, args: dict[str, Any], ctx: CallScope, /) -> ToolResult: ...


class Delegator(Protocol):
    """delegate: a child run with its own loop; its answer comes back as the result."""

    async def delegate(self, args: dict[str, Any], ctx: DelegateScope, /) -> ToolResult: ...


class WorkflowKeeper(Protocol):
    """workflow: the project's workflows; ``notes`` name the verbs the pipeline dropped."""

    async def call(
        self, args: dict[str, Any], ctx: CallScope, notes: Sequence[str], /
    ) -> ToolResult: ...


def service_key(kind: type[Any]) -> str:
    """How :attr:`Services.deferred` names a service of type ``kind``: its module and
    qualified name, known to a provider without importing the type."""
    return f"{kind.__module__}.{kind.__qualname__}"


class Deferred(Generic[T]):
    """A service built by ``build`` on its first use, then kept."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None

    @property
    def built(self) -> T | None:
        """The service, if something used it already."""
        return self._value

    def value(self) -> T:
        if self._value is None:
            self._value = self._build()
        return self._value


class ServicesConflict(ValueError):
    """Two providers offered the same service."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """Everything a handler may use besides its arguments and the call's context."""

    shells: Shells | None = None
    web: Web | None = None
    reports: ReportSink | None = None
    """Where background work reports when it ends (the runtime)."""
    questions: QuestionAsker | None = None
    goals: GoalKeeper | None = None
    compactions: Compactor | None = None
    runs: Delegator | None = None
    """Delegate runs (subagents)."""
    workflows: WorkflowKeeper | None = None
    """The project's workflows, their runs, schedules and webhooks."""
    usage: UsageRecorder | None = None
    """Meters model use a tool makes for the conversation (set for calls of a run)."""
    conversation_model: ConversationModel | None = None
    """The model the calling conversation runs on (set for calls of a run)."""
    credentials: CredentialLookup | None = None
    """Stored provider credentials (the connect issue provides them)."""
    skills: SkillActivator | None = None
    """Skill activation and what execute's shell calls receive (credentials, ticket)."""
    conversation_access: ConversationAccess | None = None
    """Who may read a conversation, and so its shells' output."""
    extra: Mapping[type[Any], Any] = field(default_factory=dict)
    """Services of other kinds, keyed by their type; see :meth:`get`."""
    deferred: Mapping[str, Deferred[Any]] = field(default_factory=dict)
    """Extras built on their first :meth:`get`, keyed by their type's :func:`service_key`:
    a provider need not import (nor build) a service no caller of this process uses."""

    def get(self, kind: type[T]) -> T | None:
        """The provided service of type ``kind`` (a field, an extra or a deferred extra,
        built now if it was not yet), or None."""
        found = self.extra.get(kind)
        if isinstance(found, kind):
            return found
        later = self.deferred.get(service_key(kind))
        if later is not None:
            built = later.value()
            if isinstance(built, kind):
                return built
        for slot in fields(self):
            value = getattr(self, slot.name)
            if slot.name not in _KEYED and isinstance(value, kind):
                return value
        return None

    def require(self, kind: type[T]) -> T:
        """Like :meth:`get`, but a missing service is a :class:`~corral.errors.NotFound`."""
        found = self.get(kind)
        if found is None:
            raise NotFound(
                f"no {kind.__name__} service is installed on this platform; the package "
                "that provides it may be disabled or failed to load (`corral tools list`)"
            )
        return found

    def provided(self) -> dict[str, Any]:
        """The fields that hold a service, by name (``extra`` included when not empty)."""
        held = {s.name: getattr(self, s.name) for s in fields(self)}
        return {
            name: value
            for name, value in held.items()
            if value is not None and not (name in _KEYED and not value)
        }

    def over(self, base: Services) -> Services:
        """These services laid over ``base``: fields set here win, extras are merged."""
        changes = {k: v for k, v in self.provided().items() if k not in _KEYED}
        return replace(
            base,
            **changes,
            extra={**base.extra, **self.extra},
            deferred={**base.deferred, **self.deferred},
        )

    def joined(self, other: Services) -> Services:
        """Both providers' services together; a service both provide is a conflict."""
        mine = {service_key(k) for k in self.extra} | set(self.deferred)
        theirs = {service_key(k) for k in other.extra} | set(other.deferred)
        clash = sorted(
            (set(self.provided()) & set(other.provided())) - _KEYED
            | {key.rpartition(".")[2] for key in mine & theirs}
        )
        if clash:
            raise ServicesConflict(f"already provided: {', '.join(clash)}")
        return other.over(self)
