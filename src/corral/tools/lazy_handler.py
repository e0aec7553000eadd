"""A package's async handler that imports its module with the tool's first call.

Discovery takes a handler from the package's handlers module; a package whose tools pull
in heavy modules (providers, extractors) can export ``lazy_handler("pkg.tool", "tool")``
instead, so opening the platform (``corral tools list``) never imports them. The tool's
spec still comes from its JSON file, checked at discovery as before.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from corral.tools.context import CallContext

__all__ = ["lazy_handler"]

AsyncHandler = Callable[[dict[str, Any], CallContext], Awaitable[Any]]


def lazy_handler(module: str, name: str) -> AsyncHandler:
    """An async handler that imports ``module`` on its first call and runs its ``name``,
    which must be an async function taking ``(args, ctx)``."""
    loaded: list[AsyncHandler] = []

    async def handler(args: dict[str, Any], ctx: CallContext) -> Any:
        if not loaded:
            target = getattr(importlib.import_module(module), name)
            if not inspect.iscoroutinefunction(target):
                raise TypeError(f"{module}.{name} must be an async function (args, ctx)")
            loaded.append(target)
        return await loaded[0](args, ctx)

    handler.__name__ = handler.__qualname__ = name
    handler.__module__ = module
    return handler
