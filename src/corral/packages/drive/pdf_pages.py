"""PDF files: their text per page (pypdf, shared with web_fetch) and one page drawn as an image.

Drawing uses ``pdftoppm`` from Debian's ``poppler-utils`` (``scripts/setup`` installs it);
where it is missing, asking for a page image says so and names the package. The drawing runs
as a child process with a deadline and a bounded output size, reading the already opened
file through its descriptor, so it sees exactly the file the policy approved.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO

from corral.errors import ToolError
from corral.web.extraction.errors import UnsupportedContent
from corral.web.extraction.pdf import render_pdf

__all__ = ["RENDER_SECONDS", "RENDER_SIZE", "page_image", "pdf_text", "pdftoppm"]

RENDER_SECONDS = 30.0
RENDER_SIZE = 1600
"""Longest side of a drawn page, in pixels."""
_MAX_PNG = 16 * 1024 * 1024


def pdftoppm() -> str | None:
    """The ``pdftoppm`` binary, or None when poppler-utils is not installed."""
    return shutil.which("pdftoppm")


_PDF_PROBLEMS = {
    "encrypted_pdf": "it is encrypted and needs a password",
    "unreadable_pdf": "it is damaged or not a PDF",
    "no_text_pdf": "its pages hold no text layer (scanned images?)",
}


def pdf_text(body: bytes, uri: str) -> str:
    """Every page's text under a ``[page N]`` marker."""
    try:
        return render_pdf(body, url=uri, markdown=False).text
    except UnsupportedContent as err:
        reason = str(err.data.get("reason", "unreadable_pdf"))
        why = _PDF_PROBLEMS.get(reason, "it cannot be read")
        raise ToolError(
            f"the PDF {uri!r} yields no text: {why}; call again with render_page to see a "
            "page drawn as an image",
            code="unreadable_pdf",
            data=err.data,
        ) from None


def page_image(handle: BinaryIO, page: int, pages: int) -> bytes:
    """Page ``page`` (1-based) of the open PDF drawn as PNG bytes."""
    binary = pdftoppm()
    if binary is None:
        raise ToolError(
            "drawing a PDF page needs pdftoppm (Debian package poppler-utils), which is not "
            "installed here; ask an administrator to run scripts/setup, or read the PDF's text "
            "without render_page",
            code="render_unavailable",
        )
    if page > pages:
        raise ToolError(
            f"render_page {page} is past the end: the PDF has {pages} page(s)",
            code="invalid_arguments",
        )
    fd = handle.fileno()
    with tempfile.TemporaryDirectory(prefix="corral-pdf-") as folder:
        # pdftoppm 22 writes nothing to stdout for PNG: it gets a file of its own.
        out = Path(folder) / "page"
        command = [binary, "-png", "-singlefile", "-f", str(page), "-l", str(page)]
        command += ["-scale-to", str(RENDER_SIZE), f"/dev/fd/{fd}", str(out)]
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                pass_fds=(fd,),
                timeout=RENDER_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ToolError(
                f"drawing page {page} took longer than {RENDER_SECONDS:.0f} s and was stopped",
                code="render_failed",
            ) from None
        drawn = out.with_suffix(".png")
        image = drawn.read_bytes() if drawn.is_file() else b""
    if done.returncode != 0 or not image.startswith(b"\x89PNG"):
        detail = done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"
        raise ToolError(f"page {page} could not be drawn: {detail}", code="render_failed")
    if len(image) > _MAX_PNG:
        raise ToolError(f"page {page} drew larger than {_MAX_PNG:,} bytes", code="too_large")
    return image
