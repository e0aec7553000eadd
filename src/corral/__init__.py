"""Corral: an agent platform whose tools are the product.

async with corral.open("corral-data") as platform:
    result = await platform.call_tool("web_fetch", {"url": "https://example.org"})
"""

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
