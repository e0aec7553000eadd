"""The value every extraction returns, and the fixed vocabularies it uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Extraction", "ExtractorName", "Format", "Kind"]

Format = Literal["markdown", "text", "raw", "json"]
"""How the caller wants the body rendered (web_fetch's ``format`` input)."""

Kind = Literal["html", "markdown", "json", "xml", "text", "pdf"]
"""What the body turned out to be, after sniffing (not necessarily what the server declared)."""

ExtractorName = Literal[
    "trafilatura",
    "trafilatura-recall",
    "readability",
    "html-text",
    "markdown-passthrough",
    "json",
    "xml",
    "feed",
    "text",
    "pypdf",
    "raw",
]
"""Which step produced the text: the first three are the HTML chain in fall-through order,
``html-text`` being Corral's own lxml-based converter of last resort."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """What web_fetch puts under its header for one fetched body, plus what it knows about it."""

    text: str
    """The rendered content, in the requested format."""
    kind: Kind
    """The content kind the body was handled as."""
    extractor: ExtractorName
    """The step that produced ``text``."""
    title: str | None = None
    """The document's title when one was found (HTML title, feed title, PDF metadata…)."""
    notes: tuple[str, ...] = ()
    """Things a model should know to read ``text`` correctly or to recover, in plain words."""
    js_only: bool = False
    """True when the page's content only appears once a browser runs its scripts."""
    original_length: int = 0
    """Size of the body as received, in bytes."""
    encoding: str | None = None
    """The character encoding the body was decoded with (``None`` for PDF)."""

    def header_lines(self) -> list[str]:
        """``key: value`` lines describing this extraction, for a result header."""
        lines = [f"content kind: {self.kind}", f"extractor: {self.extractor}"]
        if self.title:
            lines.append(f"title: {self.title}")
        if self.js_only:
            lines.append("needs JavaScript: yes")
        lines.extend(f"note: {note}" for note in self.notes)
        return lines
