"""PDF bodies: text per page through pypdf, clear errors for what cannot be read."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader, PdfWriter

from corral.web import UnsupportedContent, extract, extract_document

URL = "https://docs.example/report.pdf"


def make_pdf(*pages: str) -> bytes:
    """A real PDF, written object by object: one Helvetica text line per page."""
    objects: list[bytes] = []
    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode())
    font_number = 3 + 2 * count
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode() if text else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font_number} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def encrypted(pdf: bytes, *, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_the_hand_built_pdf_is_a_real_pdf() -> None:
    reader = PdfReader(io.BytesIO(make_pdf("alpha", "beta")))
    assert len(reader.pages) == 2
    assert "beta" in reader.pages[1].extract_text()


def test_pdf_text_comes_out_page_by_page() -> None:
    body = make_pdf("Quarterly report for the Elm valley", "Otter sightings rose sharply")
    result = extract_document(body, "application/pdf", url=URL)
    assert result.kind == "pdf"
    assert result.extractor == "pypdf"
    assert result.encoding is None
    assert "2 page(s)" in result.notes
    first = result.text.index("## Page 1")
    second = result.text.index("## Page 2")
    assert first < result.text.index("Quarterly report") < second
    assert result.text.index("Otter sightings rose sharply") > second


def test_pdf_text_format_uses_plain_page_markers() -> None:
    text = extract(make_pdf("one", "two"), "application/pdf", url=URL, format="text")
    assert "[page 1]" in text and "[page 2]" in text
    assert "##" not in text


def test_pdf_is_recognised_by_its_signature_whatever_the_declared_type() -> None:
    result = extract_document(make_pdf("signed"), "application/octet-stream", url=URL)
    assert result.kind == "pdf" and "signed" in result.text
    mislabelled = extract_document(make_pdf("signed"), "text/html", url=URL)
    assert mislabelled.kind == "pdf"
    assert "declared 'text/html' but the body is a PDF" in mislabelled.notes


def test_raw_format_on_a_pdf_returns_its_text_and_says_so() -> None:
    result = extract_document(make_pdf("raw please"), "application/pdf", url=URL, format="raw")
    assert "raw please" in result.text
    assert any("format 'raw' does not apply to a PDF" in note for note in result.notes)


def test_json_format_on_a_pdf_is_an_error() -> None:
    with pytest.raises(UnsupportedContent) as caught:
        extract(make_pdf("x"), "application/pdf", url=URL, format="json")
    assert caught.value.code == "unsupported_content"
    assert "is a PDF" in caught.value.message


def test_password_protected_pdf_is_a_clear_error() -> None:
    body = encrypted(make_pdf("top secret minutes"), user_password="hunter2")
    with pytest.raises(UnsupportedContent) as caught:
        extract(body, "application/pdf", url=URL)
    assert caught.value.code == "unsupported_content"
    assert "encrypted" in caught.value.message and URL in caught.value.message
    assert caught.value.data["reason"] == "encrypted_pdf"


def test_pdf_encrypted_with_an_empty_user_password_is_read() -> None:
    body = encrypted(make_pdf("open to all readers"), user_password="")
    assert PdfReader(io.BytesIO(body)).is_encrypted
    assert "open to all readers" in extract(body, "application/pdf", url=URL)


def test_damaged_pdf_is_a_clear_error() -> None:
    body = b"%PDF-1.7\n" + bytes(range(256)) * 4
    with pytest.raises(UnsupportedContent) as caught:
        extract(body, "application/pdf", url=URL)
    assert caught.value.data["reason"] == "unreadable_pdf"
    assert "cannot be read" in caught.value.message


def test_pdf_without_a_text_layer_is_an_error_not_an_empty_document() -> None:
    with pytest.raises(UnsupportedContent) as caught:
        extract(make_pdf("", ""), "application/pdf", url=URL)
    assert "no text" in caught.value.message
    assert caught.value.data == {"reason": "no_text_pdf", "pages": 2}


def test_declared_pdf_that_is_really_text_is_read_as_text() -> None:
    result = extract_document(b"Access denied, please log in.", "application/pdf", url=URL)
    assert result.kind == "text"
    assert result.text == "Access denied, please log in."
    assert "declared 'application/pdf' but the body is not a PDF; read as text" in result.notes


def test_a_web_page_that_mentions_the_pdf_signature_is_not_a_pdf() -> None:
    body = b"<html><body><p>Every PDF file starts with %PDF-1.7 and a newline.</p></body></html>"
    result = extract_document(body, "text/html", url=URL)
    assert result.kind == "html"
    assert "starts with %PDF-1.7" in result.text


def test_pdf_signature_after_leading_junk_counts_for_untyped_bodies() -> None:
    body = b"\x00\x00junk" + make_pdf("late header")
    assert "late header" in extract(body, "application/octet-stream", url=URL)
