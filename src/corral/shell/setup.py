"""Setting up shell execution for an opened platform.

:func:`open_shell_service` writes the sandbox's synthetic ``/etc`` files, finds out whether
bubblewrap works here (commands are refused when it does not, unless the operator chose
``sandbox = "unconfined"``) and builds the :class:`~corral.shell.service.ShellService`.
:func:`recover_shells` runs once everything is wired: it marks background shells lost to a
restart, reports them and delivers reports still pending. The built-in package's install
hook calls both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.service_protocols import ReportSink
from corral.settings import Settings
from corral.shell.background import ConversationAccess
from corral.shell.host.client import HostBrokerClient
from corral.shell.sandbox import SandboxFiles, SandboxStatus, detect_sandbox
from corral.shell.service import ShellService, StateSource

__all__ = ["open_shell_service", "recover_shells"]

log = logging.getLogger("corral.shell")


async def open_shell_service(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    state: StateSource,
    reports: Callable[[], ReportSink | None],
    conversation_access: Callable[[], ConversationAccess | None],
) -> ShellService:
    files = SandboxFiles.write(settings.private_dir / "sandbox")
    if settings.sandbox == "unconfined":
        status = SandboxStatus(
            mode="unconfined",
            available=False,
            binary=None,
            reason="the operator set sandbox = 'unconfined'",
        )
        log.warning(
            "shell commands run UNCONFINED (sandbox = 'unconfined'): only command analysis "
            "and the URI-policy gate stand between a command and this machine"
        )
    else:
        status = await detect_sandbox("bubblewrap", settings.bwrap_path, files)
        if not status.available:
            log.error("execute is unavailable: %s", status.refusal())
    broker = None
    if settings.host_broker_socket is not None:
        broker = HostBrokerClient(settings.host_broker_socket)
    return ShellService(
        settings=settings,
        sessions=sessions,
        state=state,
        reports=reports,
        conversation_access=conversation_access,
        status=status,
        files=files,
        broker=broker,
    )


async def recover_shells(service: ShellService) -> None:
    """Report background shells lost to a restart; deliver reports still pending."""
    for record in await service.background.recover():
        log.warning(
            "background shell %s (%r) was lost to a restart; its report is queued",
            record.id,
            record.command[:80],
        )
    await service.background.deliver_pending()
