"""Corral: an agent platform whose tools are the product.

async with corral.open("corral-data") as platform:
    result = await platform.call_tool("web_fetch", {"url": "https://example.org"})

The names below load on first use (PEP 562), so ``import corral`` — and the ``corral``
command, which imports this package first — stays light: the platform, its database layer
and the model libraries load only when something asks for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.errors import (
        ApprovalDenied,
        ConfigError,
        CorralError,
        FeatureMissing,
        InvalidArguments,
        NotFound,
        NotVisible,
        PolicyDenied,
        Refusal,
        RunFailure,
        ToolError,
        UsageError,
    )
    from corral.platform import Platform, open
    from corral.settings import Settings, load_settings
    from corral.tools.context import CallContext, Cancellation, Narrowing
    from corral.tools.results import (
        AudioBlock,
        ImageBlock,
        ResourceBlock,
        TextBlock,
        ToolResult,
    )

__version__ = "0.1.0"

__all__ = [
    "ApprovalDenied",
    "AudioBlock",
    "CallContext",
    "Cancellation",
    "ConfigError",
    "CorralError",
    "FeatureMissing",
    "ImageBlock",
    "InvalidArguments",
    "Narrowing",
    "NotFound",
    "NotVisible",
    "Platform",
    "PolicyDenied",
    "Refusal",
    "ResourceBlock",
    "RunFailure",
    "Settings",
    "TextBlock",
    "ToolError",
    "ToolResult",
    "UsageError",
    "__version__",
    "load_settings",
    "open",
]

_ERRORS = "corral.errors"
_RESULTS = "corral.tools.results"
_CONTEXT = "corral.tools.context"

#: Where each public name lives; the module is imported when the name is first read.
_HOMES: dict[str, str] = {
    "ApprovalDenied": _ERRORS,
    "AudioBlock": _RESULTS,
    "CallContext": _CONTEXT,
    "Cancellation": _CONTEXT,
    "ConfigError": _ERRORS,
    "CorralError": _ERRORS,
    "FeatureMissing": _ERRORS,
    "ImageBlock": _RESULTS,
    "InvalidArguments": _ERRORS,
    "Narrowing": _CONTEXT,
    "NotFound": _ERRORS,
    "NotVisible": _ERRORS,
    "Platform": "corral.platform",
    "PolicyDenied": _ERRORS,
    "Refusal": _ERRORS,
    "ResourceBlock": _RESULTS,
    "RunFailure": _ERRORS,
    "Settings": "corral.settings",
    "TextBlock": _RESULTS,
    "ToolError": _ERRORS,
    "ToolResult": _RESULTS,
    "UsageError": _ERRORS,
    "load_settings": "corral.settings",
    "open": "corral.platform",
}

# Hidden from type checkers: they read the imports above, and a visible module __getattr__
# would make them accept any misspelt name as Any.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'corral' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # later reads skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_HOMES})
