"""The drive's service: what its handlers share (resolution, the read log, the search engine).

Installed by the package's own hook and found by handlers as ``ctx.services.get(Drive)``.
"""

from __future__ import annotations

import shutil

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import ToolError
from corral.packages.drive.locations import Location, Locator
from corral.packages.drive.read_log import ReadLog
from corral.policy.sources import Access
from corral.tools.context import CallContext

__all__ = ["Drive", "drive_of"]


class Drive:
    """Resolution of drive targets, the conversation read log, and the search engine."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.locator = Locator(sessions)
        self.reads = ReadLog(sessions)
        self.rg: str | None = shutil.which("rg")
        """The ripgrep binary fs_search runs, or None for the pure-Python search."""

    async def locate(self, target: str, ctx: CallContext, access: Access) -> Location:
        """Resolve ``target`` for the call's caller and require ``access`` on it."""
        return await self.locator.locate(
            target,
            caller=ctx.caller,
            access=access,
            sources=ctx.sources,
            shells=ctx.services.shells,
        )


def drive_of(ctx: CallContext) -> Drive:
    """The installed drive service, or a clear error when the package's hook did not run."""
    drive = ctx.services.get(Drive)
    if drive is None:
        raise ToolError(
            "the drive service is not installed on this platform (`corral tools list` shows "
            "why the drive package failed)",
            code="unavailable",
        )
    return drive
