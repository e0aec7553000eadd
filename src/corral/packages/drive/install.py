"""The drive package's install hook: its service, and the runtime's attachment reader."""

from __future__ import annotations

from corral.packages.drive.attachments import DriveAttachments
from corral.packages.drive.service import Drive
from corral.runtime.package_setup import Installed, PackageSetup
from corral.tools.services import Services

__all__ = ["install"]


def install(setup: PackageSetup) -> Installed:
    drive = Drive(setup.kernel.sessions)
    setup.runtime.prompt.set_attachment_reader(DriveAttachments(drive, setup.kernel))
    return Installed(services=Services(extra={Drive: drive}))
