"""Choosing the character encoding: BOM, Content-Type, in-document declaration, fallback."""

from __future__ import annotations

import codecs

from corral.web import extract_document
from corral.web.extraction.charset import decode_body

URL = "https://charset.example/page"
CAFE = "Café crème, naïve façade — “quoted”"


def test_content_type_charset_is_used() -> None:
    result = extract_document(CAFE.encode("cp1252"), "text/plain; charset=windows-1252", url=URL)
    assert result.text == CAFE
    assert result.encoding == "cp1252"


def test_latin1_label_reads_as_windows_1252_like_browsers_do() -> None:
    # curly quotes and the em dash exist only in windows-1252, not in ISO-8859-1
    result = extract_document(CAFE.encode("cp1252"), 'text/plain; charset="ISO-8859-1"', url=URL)
    assert result.text == CAFE
    assert result.notes == ()


def test_byte_order_mark_wins_over_a_wrong_header() -> None:
    body = codecs.BOM_UTF16_LE + CAFE.encode("utf-16-le")
    result = extract_document(body, "text/plain; charset=iso-8859-1", url=URL)
    assert result.text == CAFE
    assert result.encoding == "utf-16-le"
    utf8 = extract_document(codecs.BOM_UTF8 + b"plain", "text/plain", url=URL)
    assert utf8.text == "plain"  # the BOM itself is not text


def test_meta_charset_is_found_in_the_document() -> None:
    russian = "Выдры вернулись в долину реки"
    body = (
        b'<html><head><meta charset="windows-1251"><title>t</title></head><body><p>'
        + russian.encode("cp1251")
        + b"</p></body></html>"
    )
    result = extract_document(body, "text/html", url=URL)
    assert result.text == russian
    assert result.encoding == "cp1251"


def test_http_equiv_declaration_is_found_too() -> None:
    body = (
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
        b"</head><body><p>" + "カワウソが戻ってきた".encode("shift_jis") + b"</p></body></html>"
    )
    assert extract_document(body, "text/html", url=URL).text == "カワウソが戻ってきた"


def test_header_charset_outranks_the_meta_declaration() -> None:
    body = b'<html><head><meta charset="shift_jis"></head><body><p>' + CAFE.encode("cp1252")
    result = extract_document(body + b"</p></body></html>", "text/html; charset=cp1252", url=URL)
    assert result.text == CAFE


def test_xml_declaration_encoding_is_used() -> None:
    body = '<?xml version="1.0" encoding="ISO-8859-15"?><note><to>Zoë €</to></note>'.encode(
        "iso-8859-15"
    )
    result = extract_document(body, "application/xml", url=URL)
    assert "<to>Zoë €</to>" in result.text
    assert result.encoding == "iso8859-15"


def test_utf8_body_under_a_legacy_label_is_read_as_utf8_and_noted() -> None:
    result = extract_document(CAFE.encode("utf-8"), "text/plain; charset=iso-8859-1", url=URL)
    assert result.text == CAFE
    assert result.notes == (
        "declared charset 'iso-8859-1' but the body is valid UTF-8; read as UTF-8",
    )


def test_undeclared_bodies_try_utf8_then_windows_1252() -> None:
    assert extract_document(CAFE.encode("utf-8"), "text/plain", url=URL).encoding == "utf-8"
    legacy = extract_document(CAFE.encode("cp1252"), "text/plain", url=URL)
    assert legacy.text == CAFE and legacy.encoding == "cp1252"


def test_unknown_or_unsafe_labels_are_ignored_with_a_note() -> None:
    result = extract_document("naïve".encode(), "text/plain; charset=x-made-up", url=URL)
    assert result.text == "naïve"
    assert result.notes == ("unknown charset 'x-made-up' in Content-Type was ignored",)
    # a Python codec that is not a character set must not be honoured
    escaped = decode_body(b"\\u0041", "unicode_escape")
    assert escaped.text == "\\u0041"


def test_invalid_bytes_under_a_declared_charset_are_replaced_and_counted() -> None:
    result = extract_document(b"ok \xff\xfe then more", "text/plain; charset=utf-8", url=URL)
    assert result.text == "ok \ufffd\ufffd then more"
    assert result.notes == (
        "the body is not valid 'utf-8': 2 undecodable byte sequence(s) were replaced",
    )


def test_utf16_declared_in_a_scannable_document_means_utf8() -> None:
    body = b'<html><head><meta charset="utf-16"></head><body><p>caf\xc3\xa9</p></body></html>'
    assert extract_document(body, "text/html", url=URL).text == "café"
