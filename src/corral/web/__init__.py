"""Web access for tools: the hardened fetch pipeline and extraction of what it fetches.

Extraction pulls in trafilatura and lxml, so its names load on first use: code that only
fetches (the search providers, the CLI starting up) does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.web.extraction import Extraction, UnsupportedContent, extract, extract_document

__all__ = ["Extraction", "UnsupportedContent", "extract", "extract_document"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from corral.web import extraction

        return getattr(extraction, name)
    raise AttributeError(f"module 'corral.web' has no attribute {name!r}")
