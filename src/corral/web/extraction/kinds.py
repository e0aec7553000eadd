"""Content-kind sniffing: what a body declares itself to be, and what it looks like.

Servers mislabel bodies all the time (JSON as ``text/plain``, HTML as ``text/markdown``,
feeds as ``text/html``), so the declared type is a first guess that strong signatures in the
body may overrule; :mod:`corral.web.extraction.extract` records every overrule as a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from posixpath import splitext
from typing import Literal
from urllib.parse import urlsplit

from corral.web.extraction.result import Kind

__all__ = [
    "Declared",
    "MediaType",
    "declared_kind",
    "kind_from_url",
    "looks_binary",
    "parse_content_type",
    "sniff_markup",
    "starts_like_json",
    "starts_like_pdf",
]

Declared = Kind | Literal["binary", "unknown"]
"""What a Content-Type says: a kind, a binary type we cannot render, or nothing useful."""


@dataclass(frozen=True, slots=True)
class MediaType:
    """A parsed Content-Type header value."""

    mime: str
    """Lower-cased ``type/subtype``, empty when the header was missing or unparsable."""
    charset: str | None


def parse_content_type(value: str) -> MediaType:
    """Split ``text/html; charset=UTF-8`` into its MIME type and charset."""
    mime, _, params = (value or "").partition(";")
    charset = None
    for param in params.split(";"):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip().strip("\"'"):
            charset = val.strip().strip("\"'")
    mime = mime.strip().lower()
    return MediaType(mime=mime if "/" in mime else "", charset=charset)


_TEXT_APPLICATION = frozenset(
    {
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-sh",
        "application/x-httpd-php",
        "application/sql",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/graphql",
        "application/x-tex",
        "application/csv",
    }
)
_UNKNOWN = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/unknown",
        "unknown/unknown",
    }
)
_BINARY_TOP = frozenset({"image", "audio", "video", "font", "model"})


def declared_kind(mime: str) -> Declared:
    """The kind a MIME type announces."""
    if mime in _UNKNOWN:
        return "unknown"
    top, _, sub = mime.partition("/")
    if mime in ("text/html", "application/xhtml+xml") or sub == "vnd.wap.xhtml+xml":
        return "html"
    if mime in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if sub in ("json", "x-ndjson", "ndjson", "jsonl", "x-jsonlines") or sub.endswith("+json"):
        return "json"
    if sub == "xml" or sub.endswith("+xml"):
        return "xml"
    if mime in ("application/pdf", "application/x-pdf"):
        return "pdf"
    if top == "text" or mime in _TEXT_APPLICATION:
        return "text"
    if top in _BINARY_TOP or top == "application" or top == "multipart":
        return "binary"
    return "unknown"


_EXTENSIONS: dict[str, Kind] = {
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".jsonl": "json",
    ".xml": "xml",
    ".rss": "xml",
    ".atom": "xml",
    ".pdf": "pdf",
    ".txt": "text",
}


def kind_from_url(url: str) -> Kind | None:
    """A hint from the URL's file extension, for bodies whose type was not declared."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    return _EXTENSIONS.get(splitext(path)[1].lower())


def starts_like_pdf(body: bytes, *, lenient: bool = False) -> bool:
    """The PDF signature at the start of the body (after whitespace).

    ``lenient`` accepts it anywhere in the first kilobyte, as PDF readers do; only for bodies
    declared as PDF or not typed at all, since a web page may well mention ``%PDF-``.
    """
    if body.lstrip()[:5] == b"%PDF-":
        return True
    return lenient and b"%PDF-" in body[:1024]


def starts_like_json(text: str) -> bool:
    """Cheap pre-check before trying to parse a body as JSON."""
    head = text.lstrip()[:1]
    return head in ("{", "[")


_MARKUP_START = re.compile(
    r"\s*(?:<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|\?xml|[a-z])", re.I | re.S
)
_FEED_ROOT = re.compile(r"<(rss|feed|rdf:RDF)[\s>]", re.I)
_HTML_ROOT = re.compile(r"<html[\s>]", re.I)


def sniff_markup(text: str) -> Literal["html", "xml"] | None:
    """Whether a text body is evidently an HTML or XML document (not a fragment in prose)."""
    match = _MARKUP_START.match(text[:2048])
    if match is None:
        return None
    opener = match.group(1).lower()
    if opener.startswith("!doctype") or opener in ("html", "head", "body"):
        return "html"
    if opener == "?xml":
        head = text[:4096]
        if _HTML_ROOT.search(head) and not _FEED_ROOT.search(head):
            return "html"
        return "xml"
    if _FEED_ROOT.match(text.lstrip()):
        return "xml"
    return None


def looks_binary(body: bytes) -> bool:
    """True for bodies that are not text in any encoding we would decode."""
    sample = body[:8192]
    if not sample:
        return False
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 with a byte-order mark holds NULs legitimately
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte < 9 or 13 < byte < 32 or byte == 127)
    return controls > len(sample) // 20
