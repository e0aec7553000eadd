"""The shell service, built when this process first needs it.

The service's family (the runner's call path, both guards' checks, the egress proxy with its
TLS interception and log, checkpoints, background shells) is about a tenth of what opening
the platform costs, and a command that only lists or shows never runs a shell. So the
sandbox is probed at open, as before (what ``corral doctor`` and the first call rely on),
and the service is built on first need: ``services.shells`` used (execute, the drive's
writes and shell URIs, a command check), ``services.get(ShellService)`` (the shells routes
and commands, rewinds, hooks and stdio MCP servers under the egress policy), a prompt's
running work, a checkpoint sweep, or serving. At open it is built, and background shells
recovered as before, only when one is recorded running or its report pending: one query.
Built later, it is what it would have been at open, since nothing else changes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from corral.shell.setup import SandboxProbe, build_shell_service, recover_shells
from corral.tools.services import Deferred

if TYPE_CHECKING:
    from corral.connect import CredentialStore
    from corral.kernel import Kernel
    from corral.policy.identity import Caller
    from corral.policy.sources import SourcePolicy
    from corral.runtime.background import BackgroundWork
    from corral.shell.background import BackgroundShells
    from corral.shell.check import CheckedCommand
    from corral.shell.checkpoints.keeper import CheckpointKeeper
    from corral.shell.live import LiveSink
    from corral.shell.records import ShellRecord, ShellStore
    from corral.shell.service import ShellOutcome, ShellRequest, ShellService
    from corral.shell.verdict import Verdict
    from corral.tools.services import OnCancel

__all__ = ["ShellsOnDemand", "check_egress_live"]

SHELL_SERVICE = "corral.shell.service.ShellService"
"""The service's :func:`~corral.tools.services.service_key`, known without importing it."""

_SHELLS_TO_RECOVER = text(
    "SELECT 1 FROM shells WHERE status = 'running' OR report_state = 'pending' LIMIT 1"
)
"""Whether start-up has background shells to recover or reports to deliver, without loading
the shell tables' models."""


def check_egress_live(value: Any) -> None:
    """The ``egress`` live setting's check; the egress policy loads with its first change."""
    from corral.shell.egress.policy import check_egress_setting

    check_egress_setting(value)


class ShellsOnDemand:
    """``services.shells`` and the service's registrations on the runtime, building the
    :class:`~corral.shell.service.ShellService` on first use."""

    def __init__(self, kernel: Kernel, credentials: CredentialStore, probe: SandboxProbe) -> None:
        self._kernel = kernel
        self._credentials = credentials
        self._probe = probe
        self._service: Deferred[ShellService] = Deferred(self._build)

    @property
    def built(self) -> ShellService | None:
        """The service, if this process built it."""
        return self._service.built

    def service(self) -> ShellService:
        """The service, built now if it was not yet."""
        return self._service.value()

    def _build(self) -> ShellService:
        from corral.packages.core.egress_credentials import injected_bindings
        from corral.shell.egress.upstream import UpstreamConnector
        from corral.web.fetch.addresses import AddressRules

        kernel = self._kernel
        shells = build_shell_service(
            self._probe,
            settings=kernel.settings,
            sessions=kernel.sessions,
            state=kernel.config,
            reports=lambda: kernel.services.reports,
            conversation_access=lambda: kernel.services.conversation_access,
        )
        # Network mode proxy: DNS in the proxy, and web_fetch's address rules on every
        # connection.
        shells.enable_egress(
            UpstreamConnector(judge=AddressRules().refusal),
            credentials=partial(injected_bindings, self._credentials),
        )
        return shells

    def deferred(self) -> dict[str, Deferred[Any]]:
        """The service, for :attr:`Services.deferred` (``services.get(ShellService)``)."""
        return {SHELL_SERVICE: self._service}

    # -- services.shells ----------------------------------------------------------------------

    @property
    def background(self) -> BackgroundShells:
        return self.service().background

    @property
    def store(self) -> ShellStore:
        return self.service().store

    @property
    def checkpoints(self) -> CheckpointKeeper:
        return self.service().checkpoints

    async def check(
        self, command: str, *, cwd: str | None, caller: Caller, policy: SourcePolicy | None = None
    ) -> CheckedCommand:
        return await self.service().check(command, cwd=cwd, caller=caller, policy=policy)

    async def verdict(self, command: str, *, cwd: str | None, caller: Caller) -> Verdict:
        return await self.service().verdict(command, cwd=cwd, caller=caller)

    def check_env(self, env: Mapping[str, str]) -> None:
        self.service().check_env(env)

    async def run(
        self, request: ShellRequest, *, on_cancel: OnCancel, live_sink: LiveSink
    ) -> ShellOutcome:
        return await self.service().run(request, on_cancel=on_cancel, live_sink=live_sink)

    async def start_background(self, request: ShellRequest) -> tuple[ShellRecord, list[str]]:
        return await self.service().start_background(request)

    # -- the runtime's hooks ------------------------------------------------------------------

    async def running_work(self, conversation_id: str) -> Sequence[BackgroundWork]:
        return await self.service().background.running_work(conversation_id)

    async def sweep_checkpoints(self) -> list[str]:
        return await self.service().sweep_checkpoints()

    async def host(self) -> None:
        """Serving: build it now, as at every open before."""
        self.service()

    async def start(self) -> None:
        """At open: build it and recover background shells if any is to recover."""
        async with self._kernel.sessions() as session:
            due = (await session.execute(_SHELLS_TO_RECOVER)).first() is not None
        if due:
            await recover_shells(self.service())

    async def close(self) -> None:
        shells = self.built
        if shells is not None:
            await shells.close()
