"""Turning a fetched body into text a model can read: web_fetch's extraction half.

One module per concept: :mod:`.kinds` (content-kind sniffing), :mod:`.charset`,
:mod:`.html_chain` (trafilatura → readability → :mod:`.html_text`), :mod:`.js_only`,
:mod:`.markdown`, :mod:`.json_body`, :mod:`.xml_body`, :mod:`.pdf`, :mod:`.result`, and
:mod:`.extract`, which ties them together.

:func:`extract` and :func:`extract_document` load on first use (PEP 562): they bring lxml,
and a module that only needs :class:`UnsupportedContent` (the drive's PDF pages, imported
whenever the platform opens) must not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from corral.web.extraction.errors import UnsupportedContent
from corral.web.extraction.result import Extraction, ExtractorName, Format, Kind

if TYPE_CHECKING:
    from corral.web.extraction.extract import extract, extract_document

__all__ = [
    "Extraction",
    "ExtractorName",
    "Format",
    "Kind",
    "UnsupportedContent",
    "extract",
    "extract_document",
]

# Hidden from type checkers, as in ``corral/__init__.py``: they read the imports above.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name not in ("extract", "extract_document"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module = importlib.import_module("corral.web.extraction.extract")
        # Both names at once: importing the submodule bound ``extract`` to the module itself.
        for each in ("extract", "extract_document"):
            globals()[each] = getattr(module, each)
        return globals()[name]
