"""Web access for tools: the hardened fetch pipeline and extraction of what it fetches."""

from corral.web.extraction import Extraction, UnsupportedContent, extract, extract_document

__all__ = ["Extraction", "UnsupportedContent", "extract", "extract_document"]
