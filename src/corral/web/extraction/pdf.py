"""PDF bodies: the text layer of each page, through pypdf.

The fetch layer enforces the PDF size ceiling before a body gets here; this module only
reads. A PDF that cannot be parsed, is locked with a password, or holds no text layer at all
(scanned images) raises :class:`UnsupportedContent`, since empty output would read as an
empty document.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.web.extraction.errors import UnsupportedContent

if TYPE_CHECKING:
    from pypdf import PdfReader

__all__ = ["PdfRendering", "render_pdf"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PdfRendering:
    text: str
    pages: int
    title: str | None
    notes: tuple[str, ...]


def render_pdf(body: bytes, *, url: str, markdown: bool) -> PdfRendering:
    # Imported here: pypdf is a fifth of a second that opening the platform (the drive
    # package imports this module) should not pay before a PDF is read.
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    """Extract the text of every page, each under a page marker."""
    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileNotDecryptedError("a password is required")
        count = len(reader.pages)
    except FileNotDecryptedError as err:
        raise UnsupportedContent(
            f"the PDF at {url!r} is encrypted and needs a password ({err}); its text cannot be "
            "read. Look for an unprotected copy or an HTML version of the document.",
            data={"reason": "encrypted_pdf"},
        ) from None
    except Exception as err:  # pypdf raises many types on damaged files
        raise UnsupportedContent(
            f"the PDF at {url!r} cannot be read ({type(err).__name__}: {err}); the file is "
            "damaged or not a PDF. Fetch it again, or look for an HTML version.",
            data={"reason": "unreadable_pdf"},
        ) from None
    pages: list[str] = []
    unreadable: list[int] = []
    for number in range(1, count + 1):
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError) as err:
            logger.debug("pypdf failed on page %s of %s: %s", number, url, err)
            unreadable.append(number)
            continue
        text = "\n".join(line.rstrip() for line in text.strip().splitlines())
        if text:
            marker = f"## Page {number}" if markdown else f"[page {number}]"
            pages.append(f"{marker}\n\n{text}")
    if not pages:
        reason = (
            f"no page of it could be read ({count} page(s))"
            if unreadable and len(unreadable) == count
            else f"its {count} page(s) hold no text layer (scanned images?) and there is no OCR"
        )
        raise UnsupportedContent(
            f"the PDF at {url!r} yielded no text: {reason}.",
            data={"reason": "no_text_pdf", "pages": count},
        )
    notes = []
    if unreadable:
        notes.append(
            f"page(s) {', '.join(map(str, unreadable))} could not be read and are left out"
        )
    return PdfRendering(
        text="\n\n".join(pages), pages=count, title=_title(reader), notes=tuple(notes)
    )


def _title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:  # metadata is optional; a broken info dictionary is not worth failing on
        return None
    return " ".join(str(title).split()) or None if title else None
