"""What web_fetch does to a body once it has been fetched: sniff, decode, render.

:func:`extract_document` is the whole of it; :func:`extract` returns just the text. The
fetch layer adds its own header (final URL, status, lengths, the ``max_chars`` cut) above the
text and shows :meth:`Extraction.header_lines` in it, notes included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from lxml import etree  # type: ignore[import-untyped,unused-ignore]

from corral.errors import UsageError
from corral.web.extraction.charset import decode_body
from corral.web.extraction.errors import UnsupportedContent
from corral.web.extraction.html_chain import extract_html
from corral.web.extraction.json_body import JsonRendering, NotJson, render_json
from corral.web.extraction.kinds import (
    Declared,
    declared_kind,
    kind_from_url,
    looks_binary,
    parse_content_type,
    sniff_markup,
    starts_like_json,
    starts_like_pdf,
)
from corral.web.extraction.markdown import is_html_in_disguise, markdown_title
from corral.web.extraction.pdf import render_pdf
from corral.web.extraction.result import Extraction, ExtractorName, Format, Kind
from corral.web.extraction.xml_body import NotXml, parse_xml, render_xml, root_is_html

__all__ = ["extract", "extract_document"]

_FORMATS: dict[str, Format] = {name: name for name in get_args(Format)}
_SUPPORTED = "HTML, Markdown, JSON, XML (feeds included), plain text and PDF"


def extract(body: bytes, content_type: str, *, url: str, format: str = "markdown") -> str:
    """Render a fetched body as web_fetch would, without the network.

    ``content_type`` is the response's Content-Type header value (``""`` when absent);
    ``url`` the final URL, used to resolve the page and as a type hint; ``format`` one of
    ``markdown``, ``text``, ``raw`` or ``json``. Returns the text that goes under the result
    header. Raises :class:`~corral.web.extraction.errors.UnsupportedContent` (code
    ``unsupported_content``) for a body that cannot be rendered in that format.
    """
    return extract_document(body, content_type, url=url, format=format).text


def extract_document(
    body: bytes, content_type: str, *, url: str, format: str = "markdown"
) -> Extraction:
    """Like :func:`extract`, returning the text with its kind, extractor, title and notes."""
    fmt = _check_format(format)
    media = parse_content_type(content_type)
    declared = declared_kind(media.mime)
    label = media.mime or "no content type"
    if starts_like_pdf(body, lenient=declared in ("pdf", "unknown", "binary")):
        return _pdf(body, declared, label, url=url, fmt=fmt)
    notes: list[str] = []
    wide_charset = (media.charset or "").lower().replace("_", "-").startswith(("utf-16", "utf-32"))
    if not wide_charset and looks_binary(body):
        raise UnsupportedContent(
            f"the body of {url!r} is binary data ({label!r}, {len(body)} bytes) and cannot be "
            f"shown as text; web_fetch reads {_SUPPORTED}.",
            data={"content_type": media.mime, "reason": "binary"},
        )
    if declared == "pdf":
        notes.append(f"declared {label!r} but the body is not a PDF; read as text")
        declared = "unknown"
    elif declared == "binary":
        notes.append(f"declared {label!r} but the body is text")
        declared = "unknown"
    decoded = decode_body(body, media.charset)
    notes.extend(decoded.notes)
    text = decoded.text

    def done(
        text: str,
        kind: Kind,
        extractor: ExtractorName,
        *,
        title: str | None = None,
        more_notes: tuple[str, ...] = (),
        js_only: bool = False,
    ) -> Extraction:
        return Extraction(
            text=text,
            kind=kind,
            extractor=extractor,
            title=title,
            notes=(*notes, *more_notes),
            js_only=js_only,
            original_length=len(body),
            encoding=decoded.encoding,
        )

    if fmt == "json":
        rendering = _json_or_error(text, declared, label, url)
        if declared != "json":
            notes.append(f"declared {label!r} but parsed as JSON (format 'json')")
        return done(rendering.text, "json", "json", more_notes=_json_notes(rendering))

    # raw output is not interpreted, so what sniffing concluded is not worth a note there
    sniffed = _sniff(text, declared, label, url, [] if fmt == "raw" else notes)
    if fmt == "raw":
        return done(text, sniffed.kind, "raw")
    markdown = fmt == "markdown"
    if sniffed.kind == "html":
        html = extract_html(text, url=url, markdown=markdown)
        return done(
            html.text,
            "html",
            html.extractor,
            title=html.title,
            more_notes=html.notes,
            js_only=html.js_only,
        )
    if sniffed.json is not None:
        return done(sniffed.json.text, "json", "json", more_notes=_json_notes(sniffed.json))
    if sniffed.xml is not None:
        xml = render_xml(sniffed.xml, markdown=markdown)
        return done(xml.text, "xml", "feed" if xml.feed else "xml", title=xml.title)
    plain = _normalize_newlines(text)
    if sniffed.kind == "markdown":
        return done(plain, "markdown", "markdown-passthrough", title=markdown_title(plain))
    return done(plain, "text", "text")


@dataclass(frozen=True, slots=True)
class _Sniffed:
    kind: Kind
    json: JsonRendering | None = None
    xml: etree._Element | None = None


def _sniff(text: str, declared: Declared, label: str, url: str, notes: list[str]) -> _Sniffed:
    """Decide the kind, adding a note whenever the body overrules its declared type."""
    if declared == "html":
        parsed = _try_json(text)
        if parsed is not None:
            notes.append(f"declared {label!r} but parsed as JSON")
            return _Sniffed("json", json=parsed)
        return _Sniffed("html")
    if declared == "markdown":
        if is_html_in_disguise(text):
            notes.append("markdown response was HTML in disguise; extracted as HTML")
            return _Sniffed("html")
        return _Sniffed("markdown")
    if declared == "json":
        try:
            return _Sniffed("json", json=render_json(text))
        except NotJson as err:
            notes.append(f"declared {label!r} but the body is not valid JSON ({err})")
        return _sniff_body(text, label, url, notes, hint=None)
    if declared == "xml":
        try:
            root = parse_xml(text)
        except NotXml as err:
            notes.append(f"declared {label!r} but the body is not well-formed XML ({err})")
            return _sniff_body(text, label, url, notes, hint=None)
        return _Sniffed("html") if root_is_html(root) else _Sniffed("xml", xml=root)
    if declared == "text":
        return _sniff_body(text, label, url, notes, hint="text")
    return _sniff_body(text, label, url, notes, hint=kind_from_url(url))


def _sniff_body(
    text: str, label: str, url: str, notes: list[str], *, hint: Kind | None
) -> _Sniffed:
    """Content signatures first, then the hint (declared text, or the URL's extension)."""
    announced = hint == "text"
    parsed = _try_json(text)
    if parsed is not None:
        if announced:
            notes.append(f"declared {label!r} but parsed as JSON")
        return _Sniffed("json", json=parsed)
    markup = sniff_markup(text)
    if markup == "xml" or (markup is None and hint == "xml"):
        try:
            root = parse_xml(text)
        except NotXml:
            pass
        else:
            kind: Kind = "html" if root_is_html(root) else "xml"
            if announced:
                notes.append(f"declared {label!r} but parsed as {kind.upper()}")
            return _Sniffed("html") if kind == "html" else _Sniffed("xml", xml=root)
    if markup == "html" or (markup is None and hint == "html"):
        if announced:
            notes.append(f"declared {label!r} but parsed as HTML")
        return _Sniffed("html")
    if hint == "markdown" and not is_html_in_disguise(text):
        return _Sniffed("markdown")
    return _Sniffed("text")


def _try_json(text: str) -> JsonRendering | None:
    if not starts_like_json(text):
        return None
    try:
        return render_json(text)
    except NotJson:
        return None


def _json_or_error(text: str, declared: Declared, label: str, url: str) -> JsonRendering:
    try:
        return render_json(text)
    except NotJson as err:
        what = "declared JSON" if declared == "json" else f"declared {label!r}"
        raise UnsupportedContent(
            f"format 'json' was requested but the body of {url!r} ({what}) is not JSON: {err}. "
            "Fetch it with format 'markdown' to read it, or 'raw' to see it unprocessed.",
            data={"reason": "not_json", "content_type": label},
        ) from None


def _json_notes(rendering: JsonRendering) -> tuple[str, ...]:
    if rendering.lines is None:
        return ()
    return (f"parsed as JSON Lines: {rendering.lines} records, one per block",)


def _pdf(body: bytes, declared: Declared, label: str, *, url: str, fmt: Format) -> Extraction:
    notes: list[str] = []
    if declared not in ("pdf", "unknown"):
        notes.append(f"declared {label!r} but the body is a PDF")
    if fmt == "json":
        raise UnsupportedContent(
            f"format 'json' was requested but the body of {url!r} is a PDF; "
            "fetch it with format 'markdown' or 'text' to read its text.",
            data={"reason": "not_json", "content_type": label},
        )
    if fmt == "raw":
        notes.append("format 'raw' does not apply to a PDF; its extracted text is shown")
    rendering = render_pdf(body, url=url, markdown=fmt == "markdown")
    return Extraction(
        text=rendering.text,
        kind="pdf",
        extractor="pypdf",
        title=rendering.title,
        notes=(*notes, f"{rendering.pages} page(s)", *rendering.notes),
        original_length=len(body),
    )


def _check_format(format: str) -> Format:
    checked = _FORMATS.get(format)
    if checked is None:
        raise UsageError(f"format must be one of {', '.join(map(repr, _FORMATS))}, not {format!r}")
    return checked


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
