"""Components installed on every opened platform, in order.

Each installer receives the Platform after the store is ready; it may register services
(``platform.services``), start-up work and closers (``platform.on_close``). Layers above
tools (shell execution, the runtime…) plug in here, so ``core.py`` stays small.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from corral.web.access import WEB, WebAccess

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["INSTALLERS", "install_components"]

Installer = Callable[["Platform"], Awaitable[None]]


async def install_web(platform: Platform) -> None:
    """Web access for web_fetch and the search providers: public addresses only."""
    platform.services.setdefault(WEB, WebAccess())


INSTALLERS: list[Installer] = [install_web]


async def install_components(platform: Platform) -> None:
    for install in INSTALLERS:
        await install(platform)
