"""Articles split into several containers: finding the parts an extractor left behind.

Many publishing systems cut an article body into consecutive blocks of the same kind, with an
ad slot or a newsletter box between them (``<div class="article__body">`` … ad …
``<div class="article__body">``). Extractors pick the best-scoring block and drop the rest.
After extraction this module finds the block the extracted paragraphs came from, follows it
through the page to the next elements of the same tag and class, and appends their text while
they are contiguous (little visible text between them) and not part of a comment thread,
aside, navigation or footer.
"""

from __future__ import annotations

import copy
import re
from collections import Counter

import lxml.html  # type: ignore[import-untyped,unused-ignore]

from corral.web.extraction.html_text import render_element

__all__ = ["append_continuations"]

MAX_GAP_CHARS = 100
"""Visible characters allowed between two parts of one article (an ad label, a caption)."""
MIN_PART_CHARS = 400
"""New paragraph text a part must hold to be article text rather than a box of the same
class (a newsletter plea, an author bio, previous/next links)."""
MAX_LINK_SHARE = 0.25
"""Share of a part's paragraph text allowed inside links."""
_KEY_WORDS = 10
_MIN_KEY_WORDS = 6
_WORD = re.compile(r"\w+")
_NOT_ARTICLE = re.compile(r"comment|disqus|respond|repl(?:y|ies)|discussion", re.IGNORECASE)
_OUTSIDE = frozenset({"aside", "footer", "nav"})
_SKIP = frozenset({"script", "style", "noscript", "template"})
_DROP_IN_PART = ".//figure | .//aside | .//nav | .//footer | .//form | .//button"


def append_continuations(root: lxml.html.HtmlElement, text: str, *, markdown: bool) -> str:
    """``text`` plus the text of the article's later parts, when the article is split."""
    seen = _words(text)
    container = _source_container(root, seen)
    if container is None or not container.get("class"):
        return text
    parts = [
        element
        for element in root.iter(str(container.tag))
        if element.get("class") == container.get("class")
    ]
    if len(parts) < 2:
        return text
    later = parts[parts.index(container) + 1 :]
    if not later:
        return text
    positions = _text_positions(root)
    added: list[str] = []
    previous = container
    shared = set(container.iterancestors())
    for part in later:
        if _in_side_content(part, shared):
            break
        if positions[part][0] - positions[previous][1] > MAX_GAP_CHARS:
            break
        if _substantial(part, seen):
            added.extend(_new_blocks(part, seen, markdown=markdown))
        previous = part
    if not added:
        return text
    return "\n\n".join([text, *added])


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _key(text: str) -> str | None:
    words = _WORD.findall(text.lower())
    return " ".join(words[:_KEY_WORDS]) if len(words) >= _MIN_KEY_WORDS else None


def _source_container(root: lxml.html.HtmlElement, seen: str) -> lxml.html.HtmlElement | None:
    """The element holding most of the extracted paragraphs."""
    parents: Counter[lxml.html.HtmlElement] = Counter()
    for paragraph in root.iter("p"):
        key = _key(paragraph.text_content())
        if key is not None and key in seen:
            parent = paragraph.getparent()
            if parent is not None:
                parents[parent] += 1
    if not parents:
        return None
    return parents.most_common(1)[0][0]


def _in_side_content(element: lxml.html.HtmlElement, shared: set[lxml.html.HtmlElement]) -> bool:
    """Whether ``element`` sits in a comment thread, aside, navigation or footer that the
    article's first part is not in."""
    for node in (element, *element.iterancestors()):
        if node in shared:
            return False
        marks = f"{node.get('class') or ''} {node.get('id') or ''}"
        if node.tag in _OUTSIDE or _NOT_ARTICLE.search(marks):
            return True
    return False


def _text_positions(root: lxml.html.HtmlElement) -> dict[lxml.html.HtmlElement, tuple[int, int]]:
    """For each element, the visible characters before its start and before its end."""
    positions: dict[lxml.html.HtmlElement, tuple[int, int]] = {}
    total = 0
    stack: list[tuple[lxml.html.HtmlElement, bool]] = [(root, False)]
    while stack:
        element, closing = stack.pop()
        if closing:
            positions[element] = (positions[element][0], total)
            if element.tail:
                total += len(element.tail.strip())
            continue
        positions[element] = (total, total)
        stack.append((element, True))
        if not isinstance(element.tag, str) or element.tag in _SKIP:
            continue
        if element.text:
            total += len(element.text.strip())
        stack.extend((child, False) for child in reversed(element))
    return positions


def _substantial(part: lxml.html.HtmlElement, seen: str) -> bool:
    fresh = linked = 0
    for paragraph in part.iter("p"):
        text = paragraph.text_content()
        key = _key(text)
        if key is None or key in seen:
            continue
        fresh += len(text)
        linked += sum(len(link.text_content()) for link in paragraph.iter("a"))
    return fresh >= MIN_PART_CHARS and linked <= MAX_LINK_SHARE * fresh


def _link_share(element: lxml.html.HtmlElement) -> float:
    total = len(element.text_content())
    if not total:
        return 0.0
    return sum(len(link.text_content()) for link in element.iter("a")) / total


def _new_blocks(part: lxml.html.HtmlElement, seen: str, *, markdown: bool) -> list[str]:
    trimmed = copy.deepcopy(part)
    trimmed.tail = None
    for element in trimmed.xpath(_DROP_IN_PART):
        element.drop_tree()
    for element in trimmed.xpath(".//ul | .//ol | .//p"):
        # "more stories" lists, share bars: items that are mostly links
        if _link_share(element) > (0.5 if element.tag == "p" else 0.3):
            element.drop_tree()
    blocks = []
    for block in render_element(trimmed, markdown=markdown).split("\n\n"):
        key = _key(block)
        if key is not None and key not in seen:
            blocks.append(block)
    return blocks
