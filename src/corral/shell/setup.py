"""Setting up shell execution for an opened platform.

:func:`probe_sandbox` prepares the sandbox's ``/etc`` folder and finds out which
confinement tier works here (commands are refused when none the ``sandbox`` setting allows
does, unless the operator chose ``sandbox = "unconfined"``); :func:`build_shell_service`
builds the :class:`~corral.shell.service.ShellService` on that probe, and
:func:`open_shell_service` does both. :func:`recover_shells` runs once everything is wired:
it marks background shells lost to a restart, reports them and delivers reports still
pending. The built-in package probes at open and builds the service on first need (see
:mod:`corral.platform.shells_on_demand`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.settings import Settings
from corral.shell.confinement import SandboxStatus, detect_confinement
from corral.shell.reach import drive_out_of_reach
from corral.shell.sandbox import SandboxFiles

if TYPE_CHECKING:
    # The service's module (egress, checkpoints, background shells) loads with its build.
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from corral.service_protocols import ReportSink
    from corral.shell.background import ConversationAccess
    from corral.shell.service import ShellService, StateSource

__all__ = [
    "SandboxProbe",
    "build_shell_service",
    "open_shell_service",
    "probe_sandbox",
    "recover_shells",
    "sandbox_files_dir",
]

log = logging.getLogger("corral.shell")


def sandbox_files_dir(settings: Settings) -> Path:
    """Where the sandbox's ``/etc`` is prepared: in the data folder, not in ``private/``
    (0700), because bubblewrap resolves its bind sources as the sandbox uid. It holds only
    copies of world-readable host files and synthetic account files."""
    return settings.data_dir / "sandbox"


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    """What start-up found: the tier commands run under and the sandbox's prepared files."""

    status: SandboxStatus
    files: SandboxFiles


async def probe_sandbox(settings: Settings) -> SandboxProbe:
    """Prepare the sandbox's files and find the tier that works here (logged when it is
    unconfined, missing or the weaker one)."""
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
    return SandboxProbe(status=status, files=files)


def build_shell_service(
    probe: SandboxProbe,
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    state: StateSource,
    reports: Callable[[], ReportSink | None],
    conversation_access: Callable[[], ConversationAccess | None],
) -> ShellService:
    """The service on ``probe``'s tier (with the host broker when one is configured)."""
    from corral.shell.host.client import HostBrokerClient
    from corral.shell.service import ShellService

    broker = None
    if settings.host_broker_socket is not None:
        broker = HostBrokerClient(settings.host_broker_socket)
    return ShellService(
        settings=settings,
        sessions=sessions,
        state=state,
        reports=reports,
        conversation_access=conversation_access,
        status=probe.status,
        files=probe.files,
        broker=broker,
    )


async def open_shell_service(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    state: StateSource,
    reports: Callable[[], ReportSink | None],
    conversation_access: Callable[[], ConversationAccess | None],
) -> ShellService:
    """Probe the sandbox, then build the service on it."""
    return build_shell_service(
        await probe_sandbox(settings),
        settings=settings,
        sessions=sessions,
        state=state,
        reports=reports,
        conversation_access=conversation_access,
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
