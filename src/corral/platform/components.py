"""Components installed on every opened platform, in order.

Each installer receives the Platform after the store is ready; it may register services
(``platform.services``), start-up work and closers (``platform.on_close``). Layers above
tools (shell execution, the runtime…) plug in here, so ``core.py`` stays small.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from corral.runtime.context_tools import install_context_tools
from corral.runtime.install import install_runtime
from corral.shell.install import install_shell
from corral.web.access import WEB, WebAccess

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["INSTALLERS", "install_components"]

Installer = Callable[["Platform"], Awaitable[object]]


async def install_web(platform: Platform) -> None:
    """Web access for web_fetch and the search providers: public addresses only."""
    platform.services.setdefault(WEB, WebAccess())
    # Search provider keys may come from the settings file; keep them out of every result.
    keys = (platform.settings.tavily_api_key, platform.settings.brave_api_key)
    platform.config.add_secrets([key.get_secret_value() for key in keys if key is not None])


# The runtime comes before the shells: shells found lost at start-up report through it.
INSTALLERS: list[Installer] = [install_web, install_runtime, install_context_tools, install_shell]


async def install_components(platform: Platform) -> None:
    for install in INSTALLERS:
        await install(platform)
