"""Markdown bodies: served as they are, unless they are HTML under a Markdown label."""

from __future__ import annotations

import re

from corral.web.extraction.kinds import sniff_markup

__all__ = ["is_html_in_disguise", "markdown_title"]

_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")
_STRUCTURAL = re.compile(r"<(?:div|span|script|style|table|nav|header|footer|section)\b", re.I)
_MARKUP_SHARE = 0.3
_MIN_TAGS = 10
_HEADING = re.compile(r"^#{1,2}\s+(.+?)\s*#*\s*$", re.M)


def is_html_in_disguise(text: str) -> bool:
    """True when a body labelled Markdown is really an HTML document.

    Markdown may embed some HTML (a ``<details>`` block, an image tag); a document that opens
    as HTML, or whose bytes are mostly tags with structural elements among them, is not
    Markdown whatever its label says.
    """
    if sniff_markup(text) == "html":
        return True
    tags = _TAG.findall(text)
    if len(tags) < _MIN_TAGS or not _STRUCTURAL.search(text):
        return False
    return sum(map(len, tags)) > _MARKUP_SHARE * len(text)


def markdown_title(text: str) -> str | None:
    """The first level-1 or level-2 heading, a Markdown document's usual title."""
    match = _HEADING.search(text[:4096])
    return match.group(1).strip() if match else None
