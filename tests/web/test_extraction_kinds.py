"""Markdown, JSON, XML and plain-text bodies, sniffing, formats and garbage input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corral.web
from corral.errors import UsageError
from corral.web import Extraction, UnsupportedContent, extract, extract_document

FIXTURES = Path(__file__).parent / "fixtures" / "extraction"
URL = "https://api.example/v1/items"
DOC = {"name": "otter", "sightings": [3, 5], "note": "café ☕"}
DOC_BYTES = json.dumps(DOC, separators=(",", ":"), ensure_ascii=False).encode()
PRETTY = json.dumps(DOC, indent=2, ensure_ascii=False)


def test_web_package_exports_the_extraction_api() -> None:
    assert {"extract", "extract_document", "Extraction", "UnsupportedContent"} <= set(
        corral.web.__all__
    )
    body = b"<html><body><p>Same either way.</p></body></html>"
    assert extract(body, "text/html", url=URL) == extract_document(body, "text/html", url=URL).text


def test_an_unknown_format_is_misuse() -> None:
    with pytest.raises(UsageError, match="'html'"):
        extract(b"x", "text/plain", url=URL, format="html")


# -- Markdown ---------------------------------------------------------------------------

MARKDOWN = (
    b"# Field notes\r\n\r\nOtters seen at the *weir*.\r\n\r\n"
    b"<details><summary>More</summary>Two cubs.</details>\r\n"
)


def test_markdown_is_passed_through_untouched_but_for_line_ends() -> None:
    result = extract_document(MARKDOWN, "text/markdown; charset=utf-8", url=URL)
    assert result.kind == "markdown"
    assert result.extractor == "markdown-passthrough"
    assert result.text == MARKDOWN.decode().replace("\r\n", "\n")
    assert result.title == "Field notes"
    assert result.notes == ()


def test_markdown_that_is_html_in_disguise_is_extracted_as_html() -> None:
    body = (FIXTURES / "article.html").read_bytes()
    result = extract_document(body, "text/markdown", url=URL)
    assert result.kind == "html"
    assert "markdown response was HTML in disguise; extracted as HTML" in result.notes
    assert "river otters have been seen raising cubs" in result.text
    assert "<p>" not in result.text


def test_markdown_with_a_body_of_div_soup_is_also_caught() -> None:
    soup = "".join(f'<div class="row"><span>cell {i}</span></div>\n' for i in range(20))
    result = extract_document(soup.encode(), "text/x-markdown", url=URL)
    assert result.kind == "html"


def test_markdown_url_hint_applies_when_the_type_is_missing() -> None:
    result = extract_document(b"# Notes\n\n- one\n", "", url="https://x.example/README.md")
    assert result.kind == "markdown"


# -- JSON -------------------------------------------------------------------------------


def test_declared_json_is_pretty_printed() -> None:
    result = extract_document(DOC_BYTES, "application/json", url=URL)
    assert (result.kind, result.extractor, result.text, result.notes) == (
        "json",
        "json",
        PRETTY,
        (),
    )
    vendor = extract_document(DOC_BYTES, "application/vnd.api+json", url=URL)
    assert vendor.kind == "json" and vendor.notes == ()


def test_json_declared_as_text_is_parsed_and_the_mismatch_noted() -> None:
    result = extract_document(DOC_BYTES, "text/plain", url=URL)
    assert result.kind == "json" and result.text == PRETTY
    assert result.notes == ("declared 'text/plain' but parsed as JSON",)
    html = extract_document(DOC_BYTES, "text/html", url=URL)
    assert html.notes == ("declared 'text/html' but parsed as JSON",)


def test_json_format_parses_whatever_the_declared_type_and_says_so() -> None:
    declared = extract_document(DOC_BYTES, "application/json", url=URL, format="json")
    assert declared.text == PRETTY and declared.notes == ()
    undeclared = extract_document(DOC_BYTES, "text/html", url=URL, format="json")
    assert undeclared.text == PRETTY
    assert undeclared.notes == ("declared 'text/html' but parsed as JSON (format 'json')",)
    missing = extract_document(DOC_BYTES, "", url=URL, format="json")
    assert missing.notes == ("declared 'no content type' but parsed as JSON (format 'json')",)


def test_json_format_on_a_non_json_body_is_a_clear_error() -> None:
    with pytest.raises(UnsupportedContent) as caught:
        extract(b"name,count\notter,3\n", "text/csv", url=URL, format="json")
    error = caught.value
    assert error.code == "unsupported_content"
    assert "declared 'text/csv'" in error.message and "line 1 column 1" in error.message
    assert error.data["reason"] == "not_json"


def test_broken_json_under_a_json_label_is_shown_as_text_with_a_note() -> None:
    result = extract_document(b'{"name": "otter",', "application/json", url=URL)
    assert result.kind == "text" and result.text == '{"name": "otter",'
    assert result.notes[0].startswith("declared 'application/json' but the body is not valid JSON")


def test_json_lines_are_rendered_record_by_record() -> None:
    body = b'{"id": 1}\n{"id": 2}\n\n{"id": 3}\n'
    result = extract_document(body, "application/x-ndjson", url=URL)
    assert result.kind == "json"
    assert result.text == '{\n  "id": 1\n}\n{\n  "id": 2\n}\n{\n  "id": 3\n}'
    assert result.notes == ("parsed as JSON Lines: 3 records, one per block",)


def test_raw_format_keeps_json_as_sent() -> None:
    assert extract(DOC_BYTES, "application/json", url=URL, format="raw") == DOC_BYTES.decode()


# -- XML --------------------------------------------------------------------------------


def test_rss_feed_becomes_an_item_list() -> None:
    body = (FIXTURES / "feed_rss.xml").read_bytes()
    result = extract_document(body, "application/rss+xml", url=URL)
    assert (result.kind, result.extractor) == ("xml", "feed")
    assert result.title == "Valley Courier: Environment"
    text = result.text
    assert "2 item(s)" in text
    assert "## 1. River otters return to the Elm valley" in text
    assert "link: https://courier.example/otters" in text
    assert "date: Tue, 04 Apr 2023 09:00:00 GMT" in text
    assert "Camera traps recorded a **female and two cubs**." in text  # HTML description
    assert text.index("## 1.") < text.index("## 2. Tree planting passes twelve thousand")
    plain = extract(body, "application/rss+xml", url=URL, format="text")
    assert "1. River otters return" in plain and "##" not in plain and "**" not in plain


def test_atom_feed_becomes_an_item_list() -> None:
    body = (FIXTURES / "feed_atom.xml").read_bytes()
    result = extract_document(body, "application/atom+xml", url=URL)
    assert result.extractor == "feed" and result.title == "Lighthouse Notes"
    assert "link: https://notes.example/long-winter" in result.text  # rel=alternate, not edit
    assert "notes.example/edit" not in result.text
    assert "date: 2024-01-09T10:00:00Z" in result.text
    assert "The keepers rationed the *tinned peaches*." in result.text
    assert "Why the horn had to be wound by hand." in result.text


def test_feed_served_as_text_html_or_untyped_is_still_a_feed() -> None:
    body = (FIXTURES / "feed_rss.xml").read_bytes()
    assert extract_document(body, "text/xml", url=URL).extractor == "feed"
    untyped = extract_document(body, "application/octet-stream", url=URL)
    assert untyped.extractor == "feed" and untyped.notes == ()
    as_text = extract_document(body, "text/plain", url=URL)
    assert as_text.extractor == "feed"
    assert as_text.notes == ("declared 'text/plain' but parsed as XML",)


def test_other_xml_is_indented() -> None:
    body = b'<?xml version="1.0"?><catalog><book id="1"><title>Otters</title></book></catalog>'
    result = extract_document(body, "application/xml", url=URL)
    assert result.extractor == "xml"
    assert result.text == (
        '<catalog>\n  <book id="1">\n    <title>Otters</title>\n  </book>\n</catalog>'
    )


def test_xml_entities_are_never_resolved() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY leak SYSTEM "file:///etc/hostname">'
        b'<!ENTITY big "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA">]>'
        b"<r><a>&leak;</a><b>&big;&big;</b></r>"
    )
    text = extract(body, "application/xml", url=URL)
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    assert not hostname or hostname not in text
    assert "AAAAAAAAAA" not in text
    assert "&leak;" in text


def test_malformed_xml_is_shown_as_text_with_a_note() -> None:
    result = extract_document(b"<catalog><book></catalog>", "application/xml", url=URL)
    assert result.kind in ("text", "html")
    assert result.notes[0].startswith("declared 'application/xml' but the body is not well-formed")


# -- plain text and sniffing ---------------------------------------------------------------


def test_plain_text_is_passed_through() -> None:
    result = extract_document(b"line one\r\nline two\rline three", "text/plain", url=URL)
    assert (result.kind, result.extractor) == ("text", "text")
    assert result.text == "line one\nline two\nline three"
    csv = extract_document(b"name,count\notter,3\n", "text/csv", url=URL)
    assert csv.kind == "text" and csv.text == "name,count\notter,3\n"


def test_html_sent_as_plain_text_is_extracted_with_a_note() -> None:
    body = b"<!DOCTYPE html><html><body><p>Plain label, HTML body.</p></body></html>"
    result = extract_document(body, "text/plain", url=URL)
    assert result.kind == "html" and result.text == "Plain label, HTML body."
    assert result.notes == ("declared 'text/plain' but parsed as HTML",)


def test_untyped_bodies_are_sniffed() -> None:
    html = b"  <!-- hi --><html><body><p>Sniffed as HTML.</p></body></html>"
    assert extract_document(html, "", url=URL).kind == "html"
    assert extract_document(DOC_BYTES, "application/octet-stream", url=URL).kind == "json"
    assert extract_document(b"just words", "", url=URL).kind == "text"


def test_header_lines_describe_the_extraction() -> None:
    result = extract_document(DOC_BYTES, "text/plain", url=URL)
    assert result.header_lines() == [
        "content kind: json",
        "extractor: json",
        "note: declared 'text/plain' but parsed as JSON",
    ]


# -- garbage ------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(200))


@pytest.mark.parametrize(
    "content_type", ["image/png", "application/octet-stream", "", "text/html", "application/json"]
)
@pytest.mark.parametrize("fmt", ["markdown", "text", "raw", "json"])
def test_binary_bodies_are_a_clear_error(content_type: str, fmt: str) -> None:
    with pytest.raises(UnsupportedContent) as caught:
        extract(PNG, content_type, url=URL, format=fmt)
    assert caught.value.code == "unsupported_content"
    assert "binary data" in caught.value.message
    assert "web_fetch reads HTML, Markdown, JSON" in caught.value.message


def test_text_under_a_binary_label_is_read_with_a_note() -> None:
    result = extract_document(b"hello otters", "image/png", url=URL)
    assert result.text == "hello otters"
    assert result.notes == ("declared 'image/png' but the body is text",)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        st.binary(max_size=600),
        st.text(max_size=400).map(lambda text: text.encode("utf-8")),
        st.sampled_from([b"<", b"<html", b"{", b"[1,", b"<?xml", b"%PDF-", b"<rss><channel>"]),
    ),
    content_type=st.sampled_from(
        [
            "",
            "text/html",
            "text/plain",
            "application/json",
            "application/xml",
            "text/markdown",
            "application/pdf",
            "image/png",
            "text/html; charset=bogus",
            "text/plain; charset=utf-16",
        ]
    ),
    fmt=st.sampled_from(["markdown", "text", "raw", "json"]),
)
def test_any_input_gives_text_or_unsupported_content(
    body: bytes, content_type: str, fmt: str
) -> None:
    try:
        result = extract_document(body, content_type, url=URL, format=fmt)
    except UnsupportedContent as err:
        assert err.code == "unsupported_content" and err.message
    else:
        assert isinstance(result, Extraction) and isinstance(result.text, str)
        assert result.original_length == len(body)


def test_raw_format_carries_no_notes_about_interpretation() -> None:
    result = extract_document(DOC_BYTES, "text/plain", url=URL, format="raw")
    assert result.text == DOC_BYTES.decode()
    assert result.notes == ()
