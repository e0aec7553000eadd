"""The HTML extraction chain: trafilatura, then readability, then Corral's own converter.

Each step runs only when the one before it failed or came back empty or too short for the
page it was given. The trafilatura step makes two passes of its own:

1. precision mode, which drops more boilerplate (related links, teasers, share bars) than
   trafilatura's default;
2. when that result is short, or holds less than half of the page's paragraph text, a
   recall-mode pass as a second opinion. Precision mode's characteristic failure is
   settling on a small fragment of the article, and its output is kept only if it holds at
   least half of what recall mode found;
3. the later parts of an article split into several same-class containers, which both modes
   leave behind (:mod:`.continuation`).

Both passes run in trafilatura's fast mode (no internal readability/justext comparison): the
second opinion above replaces it, and keeps the cost of a page near one default extraction.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import lxml.html  # type: ignore[import-untyped,unused-ignore]

from corral.web.extraction.continuation import append_continuations
from corral.web.extraction.html_text import parse_html, render_element, visible_text_length
from corral.web.extraction.js_only import THIN_CONTENT_CHARS, detect_js_shell
from corral.web.extraction.result import ExtractorName

__all__ = ["HTML_CHAIN", "HtmlExtraction", "HtmlStep", "Page", "extract_html"]

logger = logging.getLogger(__name__)

MIN_ACCEPT_CHARS = 100
"""A step's output shorter than this (or than half the page's visible text, if that is less)
is taken as a failure and the next step runs."""
SECOND_OPINION_CHARS = 1000
"""A precision-mode result shorter than this gets a recall-mode second opinion."""
PRECISION_KEEP_SHARE = 0.5
"""Precision mode's result is kept while it holds at least this share of recall mode's."""


class Page:
    """One parsed HTML page, with the measures the steps share (computed on first use)."""

    def __init__(self, root: lxml.html.HtmlElement, *, url: str, markdown: bool) -> None:
        self.root = root
        self.url = url
        self.markdown = markdown

    @cached_property
    def visible_chars(self) -> int:
        """Visible non-whitespace characters on the whole page."""
        return visible_text_length(self.root)

    @cached_property
    def paragraph_chars(self) -> int:
        """Characters of text held in ``<p>`` elements."""
        return sum(len(p.text_content()) for p in self.root.iter("p"))

    @cached_property
    def title(self) -> str | None:
        """The page title: og:title, then ``<title>``, then the first ``<h1>``."""
        for xpath in (
            "//meta[@property='og:title']/@content",
            "//head/title//text()",
            "(//h1)[1]//text()",
        ):
            found = " ".join(" ".join(str(part) for part in self.root.xpath(xpath)).split())
            if found:
                return found
        return None


@dataclass(frozen=True, slots=True)
class Candidate:
    """What one step produced."""

    text: str
    extractor: ExtractorName


HtmlStep = Callable[[Page], Candidate | None]
"""One step of the chain: a candidate, or None when the step failed outright."""


def trafilatura_step(page: Page) -> Candidate | None:
    """Trafilatura in precision mode, with a recall-mode second opinion, and the later parts
    of a split article appended (module docstring)."""
    chosen = _trafilatura_modes(page)
    if chosen is None:
        return None
    text = append_continuations(page.root, chosen.text, markdown=page.markdown)
    return Candidate(text, chosen.extractor)


def _trafilatura_modes(page: Page) -> Candidate | None:
    precise = _trafilatura(page, favor_precision=True)
    if len(precise) >= SECOND_OPINION_CHARS and len(precise) >= page.paragraph_chars // 2:
        return Candidate(precise, "trafilatura")
    recall = _trafilatura(page, favor_recall=True)
    if precise and len(precise) >= PRECISION_KEEP_SHARE * len(recall):
        return Candidate(precise, "trafilatura")
    if recall:
        return Candidate(recall, "trafilatura-recall")
    return None


def readability_step(page: Page) -> Candidate | None:
    """readability-lxml's article guess, rendered by Corral's converter."""
    from readability import Document

    try:
        # readability edits the tree it is given
        document = Document(copy.deepcopy(page.root), url=page.url or None)
        summary = document.summary(html_partial=True)
    except Exception as err:  # a third-party heuristic on hostile markup: any failure is a miss
        logger.debug("readability failed on %s: %s", page.url, err)
        return None
    root = parse_html(summary)
    if root is None:
        return None
    return Candidate(render_element(root, markdown=page.markdown), "readability")


def html_text_step(page: Page) -> Candidate | None:
    """Every visible block of the page, navigation and footers dropped when that leaves text."""
    trimmed = copy.deepcopy(page.root)
    for element in trimmed.xpath("//nav | //footer | //aside | //form | //*[@role='navigation']"):
        element.drop_tree()
    text = render_element(trimmed, markdown=page.markdown)
    if not text:
        text = render_element(page.root, markdown=page.markdown)
    return Candidate(text, "html-text")


HTML_CHAIN: tuple[HtmlStep, ...] = (trafilatura_step, readability_step, html_text_step)
"""The steps in fall-through order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HtmlExtraction:
    """The outcome of the chain for one page."""

    text: str
    extractor: ExtractorName
    title: str | None
    notes: tuple[str, ...] = ()
    js_only: bool = False


def extract_html(
    html: str, *, url: str, markdown: bool, chain: Sequence[HtmlStep] = HTML_CHAIN
) -> HtmlExtraction:
    """Run ``chain`` over ``html`` and report the first acceptable answer."""
    root = parse_html(html)
    if root is None:
        return HtmlExtraction(
            text="", extractor="html-text", title=None, notes=("the HTML document is empty",)
        )
    page = Page(root, url=url, markdown=markdown)
    chosen: Candidate | None = None
    fallback: Candidate | None = None
    for step in chain:
        try:
            candidate = step(page)
        except Exception as err:  # one step's crash must not cost the page its other steps
            logger.warning("HTML step %s failed on %s: %s", _name(step), url, err)
            candidate = None
        if candidate is None:
            continue
        candidate = Candidate(candidate.text.strip(), candidate.extractor)
        if _acceptable(candidate.text, page):
            chosen = candidate
            break
        if candidate.text and (fallback is None or len(candidate.text) > len(fallback.text)):
            fallback = candidate
    if chosen is None:
        chosen = fallback or Candidate("", "html-text")
    notes: list[str] = []
    shell = None
    if len(chosen.text) < THIN_CONTENT_CHARS:
        shell = detect_js_shell(
            root, extracted_chars=len(chosen.text), visible_chars=page.visible_chars
        )
    if shell is not None:
        notes.append(shell.note(page.visible_chars))
    elif not chosen.text:
        notes.append("the page has no readable text")
    return HtmlExtraction(
        text=chosen.text,
        extractor=chosen.extractor,
        title=page.title,
        notes=tuple(notes),
        js_only=shell is not None,
    )


def _acceptable(text: str, page: Page) -> bool:
    return bool(text) and (len(text) >= MIN_ACCEPT_CHARS or len(text) >= page.visible_chars // 2)


def _trafilatura(page: Page, **mode: Any) -> str:
    # Imported here, as readability above: together most of a second of start-up for every
    # command that opens the platform, paid now only by the first page extracted.
    import trafilatura

    result = trafilatura.extract(
        page.root,
        url=page.url or None,
        output_format="markdown" if page.markdown else "txt",
        include_comments=False,
        fast=True,
        **mode,
    )
    return result or ""


def _name(step: HtmlStep) -> str:
    return getattr(step, "__name__", type(step).__name__)
