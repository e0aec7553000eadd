"""Setting up shell execution for an opened platform.

:func:`open_shell_service` prepares the sandbox's ``/etc`` folder, finds out which
confinement tier works here (commands are refused when none the ``sandbox`` setting allows
does, unless the operator chose ``sandbox = "unconfined"``) and builds the
:class:`~corral.shell.service.ShellService`.
:func:`recover_shells` runs once everything is wired: it marks background shells lost to a
restart, reports them and delivers reports still pending. The built-in package's install
hook calls both.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.service_protocols import ReportSink
from corral.settings import Settings
from corral.shell.background import ConversationAccess
from corral.shell.confinement import SandboxStatus, detect_confinement
from corral.shell.host.client import HostBrokerClient
from corral.shell.reach import drive_out_of_reach
from corral.shell.sandbox import SandboxFiles
from corral.shell.service import ShellService, StateSource

__all__ = ["open_shell_service", "recover_shells", "sandbox_files_dir"]

log = logging.getLogger("corral.shell")


def sandbox_files_dir(settings: Settings) -> Path:
    """Where the sandbox's ``/etc`` is prepared: in the data folder, not in ``private/``
    (0700), because bubblewrap resolves its bind sources as the sandbox uid. It holds only
    copies of world-readable host files and synthetic account files."""
    return settings.data_dir / "sandbox"


async def open_shell_service(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    state: StateSource,
    reports: Callable[[], ReportSink | None],
    conversation_access: Callable[[], ConversationAccess | None],
) -> ShellService:
    files = SandboxFiles.write(sandbox_files_dir(settings), uid=settings.sandbox_uid)
    unreachable = _drive_out_of_reach(settings)
    if unreachable is not None:
        status = SandboxStatus(mode=settings.sandbox, tier=None, reason=unreachable, blocked=True)
    else:
        status = await detect_confinement(
            settings.sandbox, settings.bwrap_path, files, uid=settings.sandbox_uid
        )
    if status.tier == "unconfined":
        log.warning(
            "shell commands run UNCONFINED (sandbox = 'unconfined'): only command analysis "
            "and the URI-policy gate stand between a command and this machine"
        )
    elif status.tier is None:
        log.error("execute is unavailable: %s", status.refusal())
    elif status.tier == "landlock" and settings.sandbox == "auto":
        log.warning(
            "bubblewrap cannot run here (%s): shell commands are confined by Landlock and "
            "seccomp instead; `corral doctor` says how to get the stronger tier",
            status.checks[0].reason if status.checks else "unknown",
        )
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


def _drive_out_of_reach(settings: Settings) -> str | None:
    """As root, why the sandbox uid cannot write the drive (then no tier can work)."""
    if os.geteuid() != 0 or settings.sandbox == "unconfined":
        return None
    return drive_out_of_reach(settings.drive_dir, settings.sandbox_uid)


async def recover_shells(service: ShellService) -> None:
    """Report background shells lost to a restart; deliver reports still pending."""
    for record in await service.background.recover():
        log.warning(
            "background shell %s (%r) was lost to a restart; its report is queued",
            record.id,
            record.command[:80],
        )
    await service.background.deliver_pending()
