"""Components installed on every opened platform, in order.

Each installer receives the Platform after the store is ready; it may register services
(``platform.services``), start-up work and closers (``platform.on_close``). Layers above
tools (shell execution, the runtime…) plug in here, so ``core.py`` stays small.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["INSTALLERS", "install_components"]

Installer = Callable[["Platform"], Awaitable[None]]

INSTALLERS: list[Installer] = []


async def install_components(platform: Platform) -> None:
    for install in INSTALLERS:
        await install(platform)
