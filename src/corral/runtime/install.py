"""Installing the runtime on a platform (one of ``corral.platform.components.INSTALLERS``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.runtime.runtime import Runtime
from corral.tools.services import REPORTS

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["RUNTIME", "install_runtime"]

RUNTIME = "runtime"
"""Key of the :class:`Runtime` in ``platform.services``."""


async def install_runtime(platform: Platform) -> Runtime:
    """Register the runtime and its report sink, recover runs left by dead processes."""
    runtime = Runtime(platform)
    platform.services[RUNTIME] = runtime
    platform.services[REPORTS] = runtime.reports
    platform.approval_hook = runtime.decide_approval
    platform.on_close(runtime.close)
    await runtime.recover()
    return runtime
