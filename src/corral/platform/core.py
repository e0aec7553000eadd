"""The Platform: the facade an embedding program, the CLI and the server use.

It holds the kernel (store, tools, dispatch, configuration, identity, approvals, logs) and
the runtime that :func:`corral.platform.composition.open_platform` built and wired, and the
services packages installed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from corral.connect import CredentialStore
from corral.errors import UsageError
from corral.kernel import DEFAULT_AGENT, ApprovalRecord, Decision, Kernel
from corral.kernel.decisions import Surface, check_surface
from corral.kernel.remembered_rules import Scope
from corral.platform.direct_calls import DirectCalls
from corral.platform.meta import conversation_meta
from corral.platform.rules import PlatformRules, Remember
from corral.policy.identity import Caller
from corral.policy.profiles import Profile, parse_profile
from corral.runtime.conversations import ConversationInfo
from corral.runtime.hooks import Hooks
from corral.runtime.parking import denial
from corral.runtime.results import ChatTurn
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import TimelineRow
from corral.tools.context import Cancellation, Narrowing, OutputSink
from corral.tools.dispatch import CallRequest
from corral.tools.registry import LoadedTool
from corral.tools.results import ToolResult
from corral.tools.services import Services

if TYPE_CHECKING:
    from corral.platform.fork import ForkOutcome
    from corral.platform.rewind import RewindPreview, RewindResult, Rewinds
    from corral.runtime.workflows import Workflows
    from corral.shell.checkpoints.rows import StoredCheckpoint
    from corral.shell.verdict import Verdict

__all__ = ["Platform"]


class Platform:
    """Everything an embedding program, the CLI or the server needs."""

    def __init__(self, kernel: Kernel, runtime: Runtime, hooks: Hooks) -> None:
        self.kernel = kernel
        self.runtime = runtime
        self.hooks = hooks
        """The operator hooks (``corral hooks list``; the pipeline's hook stage runs them)."""
        self.settings = kernel.settings
        self.engine = kernel.engine
        self.sessions = kernel.sessions
        self.registry = kernel.registry
        self.config = kernel.config
        self.logs = kernel.logs
        self.approvals = kernel.approvals
        self.identity = kernel.identity
        self.admin = kernel.admin
        self.dispatcher = kernel.dispatcher
        self.rules = PlatformRules(kernel)
        """Permission rules: check a command with them, list, remove, remember."""
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.direct_calls = DirectCalls(kernel)
        """Approved calls made outside any run, running as tasks of this process."""
        self.decisions = kernel.approvals.decisions
        """Every pending decision (approvals, questions…): ``corral inbox``."""

    @cached_property
    def rewinds(self) -> Rewinds:
        """Checkpoints of a conversation, rewind previews and rewinds: ``corral rewind``."""
        # Built (and its modules loaded) with the first use, not by every open.
        from corral.platform.rewind import Rewinds

        return Rewinds(self.kernel, self.runtime)

    @property
    def services(self) -> Services:
        """The services every call receives (``ctx.services``), as packages installed them."""
        return self.kernel.services

    @property
    def credentials(self) -> CredentialStore:
        """The encrypted credential store (per user, and per project for admins)."""
        return self.kernel.services.require(CredentialStore)

    @property
    def workflows(self) -> Workflows:
        """The project's workflows: set, run, read, schedule, webhooks and templates."""
        from corral.runtime.workflows import Workflows

        return self.kernel.services.require(Workflows)

    def provide(self, services: Services | None = None, **fields: Any) -> None:
        """Provide (or replace) services from now on: the fields given win, extras merge.

        For embedding programs and tests, e.g. ``platform.provide(web=WebAccess(...))``."""
        given = services if services is not None else Services(**fields)
        self.kernel.services = given.over(self.kernel.services)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    async def close(self) -> None:
        """End the runs first, so their last rows are stored while the packages' services
        (channels sending them to chats, shells, MCP servers) still run; then close those
        services, the runtime and the kernel."""
        try:
            await self.runtime.end_runs()
            await self.direct_calls.close()
            while self._closers:
                await self._closers.pop()()
            await self.runtime.close()
        finally:
            await self.kernel.close()

    # -- callers ----------------------------------------------------------------------------

    async def caller(self, user: str | None = None) -> Caller:
        """Resolve a user id or name (None: the local owner) with the role's current grants."""
        return await self.kernel.caller(user)

    # -- tools ------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        user: str | None = None,
        caller: Caller | None = None,
        agent: str | None = None,
        profile: Profile | str = "auto",
        run_id: str | None = None,
        conversation_id: str | None = None,
        call_id: str | None = None,
        narrowing: Narrowing | None = None,
        cancellation: Cancellation | None = None,
        output: OutputSink | None = None,
        services: Services | None = None,
    ) -> ToolResult:
        """Call a tool through the whole dispatch pipeline and return its result.

        ``services`` are laid over the installed ones for this call only; ``caller`` is
        the caller the entry point resolved (then ``user`` is not looked at)."""
        request = CallRequest(
            tool=name,
            arguments=arguments,
            caller=caller if caller is not None else await self.caller(user),
            agent=agent or DEFAULT_AGENT,
            profile=parse_profile(str(profile)),
            run_id=run_id,
            conversation_id=conversation_id,
            call_id=call_id,
            narrowing=narrowing or Narrowing(),
            cancellation=cancellation,
            output=output,
            services=services.over(self.services) if services is not None else self.services,
        )
        return await self.dispatcher.dispatch(request)

    async def visible_tools(
        self,
        *,
        user: str | None = None,
        caller: Caller | None = None,
        agent: str | None = None,
        narrowing: Narrowing | None = None,
    ) -> list[LoadedTool]:
        request = CallRequest(
            tool="",
            arguments={},
            caller=caller if caller is not None else await self.caller(user),
            agent=agent or DEFAULT_AGENT,
            narrowing=narrowing or Narrowing(),
        )
        return self.dispatcher.visible_tools(request, await self.config.dispatch_state())

    async def check_command(
        self, command: str, *, cwd: str | None = None, user: str | None = None
    ) -> Verdict:
        """Judge a shell command as ``execute`` would (analysis, then the URI-policy gate)
        for ``user`` in ``cwd``, without running anything."""
        caller = await self.caller(user)
        shells = self.services.shells
        if shells is None:
            raise UsageError("shell execution is not installed on this platform")
        return await shells.verdict(command, cwd=cwd, caller=caller)

    # -- approvals --------------------------------------------------------------------------

    async def inbox(
        self, *, user: str | None = None, status: str | None = "pending"
    ) -> list[dict[str, Any]]:
        """The decisions put to ``user`` (default: the local owner), oldest first, as
        JSON with their expiry: approvals, questions… whatever a run waits on them for
        (``status`` None: every one, answered or not)."""
        caller = await self.caller(user)
        records = await self.decisions.list(user_id=caller.user_id, status=status)
        days = float((await self.live_settings())["decisions_expire_days"])
        return [r.to_json(default_days=days) for r in records]

    async def pending_approvals(self, *, user: str | None = None) -> list[ApprovalRecord]:
        caller = await self.caller(user)
        return await self.approvals.list(status="pending", user_id=caller.user_id)

    async def decide_approval(
        self,
        approval_id: str,
        decision: Decision,
        *,
        surface: Surface = "cli",
        note: str | None = None,
        user: str | None = None,
        remember: Remember | None = None,
        scope: Scope = "agent",
    ) -> ToolResult:
        """Approve or deny a parked call, from ``surface`` (``web``, ``cli``, ``http``…;
        the Python API acts as the local owner, as the CLI does, hence ``cli``).

        Never runs the call: the first answer is stored (a later one raises
        :class:`~corral.errors.AlreadyDecided` naming it) and returns at once. A run's call
        then runs in the run's own job; a call outside any run as a task of this process
        (:class:`DirectCalls`). Approve returns a ``pending`` result saying where the call
        runs; deny the refusal the model reads. ``remember`` (``exact`` or ``family``) also
        keeps the answer as permission rules for ``scope`` (``agent``, ``user``;
        ``project`` for an admin)."""
        if decision not in ("approve", "deny"):
            raise UsageError(f"decision must be 'approve' or 'deny', not {decision!r}")
        check_surface(surface)
        decider = await self.caller(user)
        self.rules.check_choice(remember, scope, decider)
        planned = None
        if remember is not None:  # refused before the claim when it cannot be remembered
            planned = await self.rules.plan(await self.approvals.get(approval_id), remember)
        record = await self.approvals.claim(
            approval_id,
            decision,
            by=decider.user_id,
            by_name=decider.name,
            note=note,
            surface=surface,
        )
        if planned is not None:
            await self.rules.remember(
                record,
                planned,
                approved=decision == "approve",
                scope=scope,
                decider=decider,
                note=note,
            )
        if record.run_id is not None:
            decided = await self.runtime.decide_approval(
                record, decision, decider, note, surface=surface
            )
            if decided is not None:
                return decided
        if decision == "deny":
            result = denial(record.tool, decider, note)
            await self.approvals.store_result(approval_id, result.to_json())
            return result
        self.direct_calls.start(record)
        return ToolResult.wait_for(
            "approval",
            approval_id,
            f"{decider.name} approved the call to {record.tool!r}; it runs now, and its "
            f"result is stored on approval {approval_id} (`corral approvals show "
            f"{approval_id}`)",
            data={"approval_id": approval_id, "run_id": None, "decision": "approve"},
        )

    async def approval_result(self, approval_id: str) -> ToolResult | None:
        """The result of an approved call outside any run, once this process ran it (None
        when it runs nowhere here and the record has none yet)."""
        result = await self.direct_calls.wait(approval_id)
        if result is not None:
            return result
        record = await self.approvals.get(approval_id)
        return ToolResult.from_json(record.result) if record.result is not None else None

    # -- agents -----------------------------------------------------------------------------

    async def chat(
        self,
        message: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        profile: str | None = None,
        conversation_id: str | None = None,
        user: str | None = None,
        caller: Caller | None = None,
    ) -> ChatTurn:
        """Send ``message`` to an agent and run the turn until it finishes, parks or stops.

        ``caller`` is the caller the entry point resolved (then ``user`` is not looked at)."""
        return await self.runtime.chat(
            message,
            agent=agent,
            model=model,
            profile=profile,
            conversation_id=conversation_id,
            user=user,
            caller=caller,
        )

    # -- conversations ----------------------------------------------------------------------

    async def conversation(
        self, conversation_id: str, *, user: str | None = None
    ) -> ConversationInfo:
        """A conversation ``user`` (None: the local owner) may read."""
        return await self.runtime.conversation(conversation_id, user=user)

    async def rows(
        self, conversation_id: str, *, after: int = 0, user: str | None = None
    ) -> list[TimelineRow]:
        """The conversation's timeline rows after sequence number ``after``, oldest first
        (each with ``kind``, ``seq`` and ``data``)."""
        return await self.runtime.rows(conversation_id, user=user, after=after)

    async def conversation_meta(
        self, conversation_id: str, *, user: str | None = None
    ) -> dict[str, Any]:
        """See :func:`corral.platform.meta.conversation_meta`."""
        return await conversation_meta(self.runtime, self.services, conversation_id, user=user)

    async def fork(
        self,
        conversation_id: str,
        at: str,
        user: str | None = None,
        files_into: str | None = None,
    ) -> ForkOutcome:
        """Start a new conversation of ``user`` (None: the local owner) from conversation
        ``conversation_id`` before its call ``at`` (a call id, or a checkpoint step number):
        it holds the history the model had seen before that call, and nothing is run again.

        With ``files_into`` (a URI of a new folder, e.g. ``data://fork``) the files the
        conversation changed are copied there as they were before that call; the original
        files are only read. ``user`` needs read access to the conversation and its
        sources, and write access to ``files_into``."""
        from corral.platform.fork import fork_conversation

        return await fork_conversation(
            self.kernel, self.runtime, conversation_id, at, user=user, files_into=files_into
        )

    # -- checkpoints and rewind -------------------------------------------------------------

    async def checkpoints(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[StoredCheckpoint]:
        """The conversation's kept checkpoints (the steps a rewind can go back before),
        oldest first."""
        return await self.rewinds.checkpoints(conversation_id, user=user)

    async def rewind_preview(
        self,
        conversation_id: str,
        to: str,
        *,
        files: bool = True,
        conversation: bool = True,
        user: str | None = None,
    ) -> RewindPreview:
        """What :meth:`rewind` would do (per path, with diffs; the rows it would hide; the
        conflicts), changing nothing. See :mod:`corral.platform.rewind`."""
        return await self.rewinds.preview(
            conversation_id, to, files=files, conversation=conversation, user=user
        )

    async def rewind(
        self,
        conversation_id: str,
        to: str,
        *,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        user: str | None = None,
    ) -> RewindResult:
        """Go back to before ``to`` (a step number, checkpoint id or tool call id): put the
        files back (``files``) and hide that call's model turn and what followed from the
        model (``conversation``). Raises :class:`~corral.errors.ConversationBusy` while a
        run of the conversation is running or parked, PolicyDenied for files ``user`` may
        not write; returns ``refused`` with the conflicts unless ``force``."""
        return await self.rewinds.rewind(
            conversation_id, to, files=files, conversation=conversation, force=force, user=user
        )

    # -- live settings ----------------------------------------------------------------------

    async def live_settings(self) -> dict[str, Any]:
        return await self.kernel.live_settings()
