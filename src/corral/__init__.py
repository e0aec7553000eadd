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
    from corral.kernel.approvals import ApprovalRecord, Decision
    from corral.platform import Platform, open, open_platform
    from corral.runtime.conversations import ConversationInfo
    from corral.runtime.models.script import Script, script_model
    from corral.runtime.package_setup import Installed, PackageSetup
    from corral.runtime.results import ChatTurn, RunResult
    from corral.runtime.timeline import TimelineRow
    from corral.settings import Settings, load_settings
    from corral.shell.verdict import Verdict
    from corral.tools.context import CallContext, Cancellation, Narrowing
    from corral.tools.registry import Handler, LoadedTool
    from corral.tools.results import (
        AudioBlock,
        ImageBlock,
        ResourceBlock,
        TextBlock,
        ToolResult,
        Waiting,
    )
    from corral.tools.services import Services

__version__ = "0.1.0"

__all__ = [
    "ApprovalDenied",
    "ApprovalRecord",
    "AudioBlock",
    "CallContext",
    "Cancellation",
    "ChatTurn",
    "ConfigError",
    "ConversationInfo",
    "CorralError",
    "Decision",
    "FeatureMissing",
    "Handler",
    "ImageBlock",
    "Installed",
    "InvalidArguments",
    "LoadedTool",
    "Narrowing",
    "NotFound",
    "NotVisible",
    "PackageSetup",
    "Platform",
    "PolicyDenied",
    "Refusal",
    "ResourceBlock",
    "RunFailure",
    "RunResult",
    "Script",
    "Services",
    "Settings",
    "TextBlock",
    "TimelineRow",
    "ToolError",
    "ToolResult",
    "UsageError",
    "Verdict",
    "Waiting",
    "__version__",
    "load_settings",
    "open",
    "open_platform",
    "script_model",
]

_ERRORS = "corral.errors"
_RESULTS = "corral.tools.results"
_CONTEXT = "corral.tools.context"

#: Where each public name lives; the module is imported when the name is first read.
_HOMES: dict[str, str] = {
    "ApprovalDenied": _ERRORS,
    "ApprovalRecord": "corral.kernel.approvals",
    "AudioBlock": _RESULTS,
    "CallContext": _CONTEXT,
    "Cancellation": _CONTEXT,
    "ChatTurn": "corral.runtime.results",
    "ConfigError": _ERRORS,
    "ConversationInfo": "corral.runtime.conversations",
    "CorralError": _ERRORS,
    "Decision": "corral.kernel.approvals",
    "FeatureMissing": _ERRORS,
    "Handler": "corral.tools.registry",
    "ImageBlock": _RESULTS,
    "Installed": "corral.runtime.package_setup",
    "InvalidArguments": _ERRORS,
    "LoadedTool": "corral.tools.registry",
    "Narrowing": _CONTEXT,
    "NotFound": _ERRORS,
    "NotVisible": _ERRORS,
    "PackageSetup": "corral.runtime.package_setup",
    "Platform": "corral.platform",
    "PolicyDenied": _ERRORS,
    "Refusal": _ERRORS,
    "ResourceBlock": _RESULTS,
    "RunFailure": _ERRORS,
    "RunResult": "corral.runtime.results",
    "Script": "corral.runtime.models.script",
    "Services": "corral.tools.services",
    "Settings": "corral.settings",
    "TextBlock": _RESULTS,
    "TimelineRow": "corral.runtime.timeline",
    "ToolError": _ERRORS,
    "ToolResult": _RESULTS,
    "UsageError": _ERRORS,
    "Verdict": "corral.shell.verdict",
    "Waiting": "corral.tools.results",
    "load_settings": "corral.settings",
    "open": "corral.platform",
    "open_platform": "corral.platform",
    "script_model": "corral.runtime.models.script",
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
