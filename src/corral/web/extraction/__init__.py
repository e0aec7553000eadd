"""Turning a fetched body into text a model can read: web_fetch's extraction half.

One module per concept: :mod:`.kinds` (content-kind sniffing), :mod:`.charset`,
:mod:`.html_chain` (trafilatura → readability → :mod:`.html_text`), :mod:`.js_only`,
:mod:`.markdown`, :mod:`.json_body`, :mod:`.xml_body`, :mod:`.pdf`, :mod:`.result`, and
:mod:`.extract`, which ties them together.
"""

from corral.web.extraction.errors import UnsupportedContent
from corral.web.extraction.extract import extract, extract_document
from corral.web.extraction.result import Extraction, ExtractorName, Format, Kind

__all__ = [
    "Extraction",
    "ExtractorName",
    "Format",
    "Kind",
    "UnsupportedContent",
    "extract",
    "extract_document",
]
