"""The Platform: one open store, the loaded tools and the dispatch pipeline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from corral.errors import ApprovalDenied, NotFound, UsageError
from corral.platform.admin import Admin
from corral.platform.approvals import ApprovalRecord, ApprovalStore, Decision
from corral.platform.bootstrap import DEFAULT_AGENT, bootstrap, prepare_folders
from corral.platform.components import install_components
from corral.platform.config import ConfigCache
from corral.platform.identity import Identity
from corral.platform.logs import LogStore
from corral.policy.identity import Caller
from corral.policy.profiles import Profile, parse_profile
from corral.settings import Settings, load_settings
from corral.shell.service import shell_service
from corral.shell.verdict import Verdict
from corral.store import make_engine, make_sessionmaker, upgrade
from corral.tools.context import Cancellation, Narrowing, OutputSink
from corral.tools.dispatch import CallRequest, Dispatcher
from corral.tools.registry import LoadedTool, Registry, discover
from corral.tools.results import ToolResult

if TYPE_CHECKING:
    from corral.runtime.results import ChatTurn

__all__ = ["ApprovalHook", "Platform", "open", "open_platform"]

ApprovalHook = Callable[
    [ApprovalRecord, Decision, Caller, "str | None"], Awaitable["ToolResult | None"]
]
"""Answers a decided approval that belongs to a run; None leaves it to the platform."""


class Platform:
    """Everything an embedding program, the CLI or the server needs."""

    def __init__(
        self,
        settings: Settings,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        registry: Registry,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.sessions = sessions
        self.registry = registry
        self.config = ConfigCache(sessions, settings)
        self.logs = LogStore(sessions)
        self.approvals = ApprovalStore(sessions)
        self.identity = Identity(sessions, self.config)
        self.admin = Admin(
            sessions,
            self.config,
            known_tools=lambda: set(registry.tools) | set(registry.pending),
            known_packages=lambda: set(registry.packages),
        )
        self.dispatcher = Dispatcher(
            registry=registry,
            state=self.config,
            approvals=self.approvals,
            slow_calls=self.logs,
            settings=settings,
        )
        self.services: dict[str, Any] = {"platform": self}
        """Services handed to every handler as ``ctx.services`` (shells, runtime…)."""
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.approval_hook: ApprovalHook | None = None
        """Set by the runtime: a decision on a run's approval resumes that run."""

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    async def close(self) -> None:
        while self._closers:
            await self._closers.pop()()
        await self.engine.dispose()

    # -- callers ----------------------------------------------------------------------------

    async def caller(self, user: str | None = None) -> Caller:
        """Resolve a user id or name (None: the local owner) with the role's current grants."""
        snapshot = await self.config.snapshot()
        info = None
        if user is None:
            info = next((u for u in snapshot.users.values() if u.role == "owner"), None)
        else:
            info = snapshot.users.get(user) or next(
                (u for u in snapshot.users.values() if u.name == user), None
            )
        if info is None:
            raise NotFound(f"no user {user!r}; `corral users list` shows them")
        if info.disabled:
            raise UsageError(f"user {info.name!r} is disabled")
        grants = snapshot.roles.get(info.role)
        if grants is None:
            raise NotFound(f"user {info.name!r} has role {info.role!r}, which no longer exists")
        return Caller(user_id=info.id, name=info.name, role=info.role, grants=grants)

    # -- tools ------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        user: str | None = None,
        agent: str | None = None,
        profile: Profile | str = "auto",
        run_id: str | None = None,
        conversation_id: str | None = None,
        call_id: str | None = None,
        narrowing: Narrowing | None = None,
        cancellation: Cancellation | None = None,
        output: OutputSink | None = None,
        services: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call a tool through the whole dispatch pipeline and return its result."""
        request = CallRequest(
            tool=name,
            arguments=arguments,
            caller=await self.caller(user),
            agent=agent or DEFAULT_AGENT,
            profile=parse_profile(str(profile)),
            run_id=run_id,
            conversation_id=conversation_id,
            call_id=call_id,
            narrowing=narrowing or Narrowing(),
            cancellation=cancellation,
            output=output,
            services={**self.services, **(services or {})},
        )
        return await self.dispatcher.dispatch(request)

    async def visible_tools(
        self,
        *,
        user: str | None = None,
        agent: str | None = None,
        narrowing: Narrowing | None = None,
    ) -> list[LoadedTool]:
        request = CallRequest(
            tool="",
            arguments={},
            caller=await self.caller(user),
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
        return await shell_service(self.services).verdict(command, cwd=cwd, caller=caller)

    # -- approvals --------------------------------------------------------------------------

    async def pending_approvals(self, *, user: str | None = None) -> list[ApprovalRecord]:
        caller = await self.caller(user)
        return await self.approvals.list(status="pending", user_id=caller.user_id)

    async def decide_approval(
        self,
        approval_id: str,
        decision: Decision,
        *,
        note: str | None = None,
        user: str | None = None,
    ) -> ToolResult:
        """Approve (run the parked call now) or deny it; the result is stored with the record."""
        if decision not in ("approve", "deny"):
            raise UsageError(f"decision must be 'approve' or 'deny', not {decision!r}")
        decider = await self.caller(user)
        record = await self.approvals.claim(approval_id, decision, by=decider.user_id, note=note)
        if record.run_id is not None and self.approval_hook is not None:
            resumed = await self.approval_hook(record, decision, decider, note)
            if resumed is not None:
                return resumed
        if decision == "deny":
            reason = f": {note}" if note else ""
            result = ToolResult.from_error(
                ApprovalDenied(
                    f"{decider.name} denied the call to {record.tool!r}{reason}. Do not repeat "
                    "it; continue without it or ask what to do instead."
                ),
                status="denied",
            )
        else:
            # Rights are re-resolved now: a caller who lost a grant meanwhile is refused.
            request = CallRequest(
                tool=record.tool,
                arguments=record.arguments,
                caller=await self.caller(record.user_id),
                agent=record.agent,
                profile=parse_profile(record.profile),
                run_id=record.run_id,
                call_id=record.call_id,
                narrowing=Narrowing.from_json(record.narrowing),
                services=self.services,
            )
            result = await self.dispatcher.dispatch(request, approved=True)
        await self.approvals.store_result(approval_id, result.to_json())
        return result

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
    ) -> ChatTurn:
        """Send ``message`` to an agent and run the turn until it finishes, parks or stops."""
        runtime = self.services.get("runtime")
        if runtime is None:
            raise UsageError("the agent runtime is not installed on this platform")
        turn: ChatTurn = await runtime.chat(
            message,
            agent=agent,
            model=model,
            profile=profile,
            conversation_id=conversation_id,
            user=user,
        )
        return turn

    # -- live settings ----------------------------------------------------------------------

    async def live_settings(self) -> dict[str, Any]:
        return dict((await self.config.dispatch_state()).live)


async def open_platform(
    data_dir: str | os.PathLike[str] | None = None, **overrides: Any
) -> Platform:
    settings = load_settings(data_dir, **overrides)
    prepare_folders(settings)
    engine = make_engine(settings.effective_database_url)
    try:
        await upgrade(engine)
        sessions = make_sessionmaker(engine)
        await bootstrap(sessions, settings)
    except BaseException:
        await engine.dispose()
        raise
    platform = Platform(settings, engine, sessions, discover(settings.package_paths))
    try:
        await install_components(platform)
    except BaseException:
        await platform.close()
        raise
    return platform


@asynccontextmanager
async def open(
    data_dir: str | os.PathLike[str] | None = None, **overrides: Any
) -> AsyncIterator[Platform]:
    """Open the platform on ``data_dir`` (default: settings), closing it on exit."""
    platform = await open_platform(data_dir, **overrides)
    try:
        yield platform
    finally:
        await platform.close()
