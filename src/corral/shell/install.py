"""Plugging shell execution into an opened platform.

At start-up: write the sandbox's synthetic ``/etc`` files, find out whether bubblewrap
works here (commands are refused when it does not, unless the operator chose
``sandbox = "unconfined"``), register :class:`corral.shell.service.ShellService` as
``platform.services["shells"]``, mark background shells lost to a restart and report them,
deliver reports still pending, list running shells for the agent's prompt
(``services["background_work"]``), and end running shells when the platform closes.

Install it after the runtime, so the report sink exists when lost shells are reported; a
report made without a sink waits in the store and goes out with the next shell start or
:meth:`corral.shell.background.BackgroundShells.deliver_pending`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from corral.shell.host.client import HostBrokerClient
from corral.shell.sandbox import SandboxFiles, SandboxStatus, detect_sandbox
from corral.shell.service import SHELLS, ShellService

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["install_shell"]

BACKGROUND_WORK = "background_work"
"""Where the runtime looks for running background work to list in the agent's prompt."""

log = logging.getLogger("corral.shell")


async def install_shell(platform: Platform) -> None:
    settings = platform.settings
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
    service = ShellService(
        settings=settings,
        sessions=platform.sessions,
        state=platform.config,
        services=platform.services,
        status=status,
        files=files,
        broker=broker,
    )
    platform.services[SHELLS] = service
    platform.services.setdefault(BACKGROUND_WORK, []).append(service.background)
    platform.on_close(service.close)
    for record in await service.background.recover():
        log.warning(
            "background shell %s (%r) was lost to a restart; its report is queued",
            record.id,
            record.command[:80],
        )
    await service.background.deliver_pending()
