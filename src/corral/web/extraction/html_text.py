"""Corral's own HTML-to-text converter (lxml), the last step of the HTML chain.

It makes no attempt to find the article: it renders every visible block of the element it is
given, as Markdown or as plain text. It renders readability's output too, and is used on
fragments such as feed item descriptions. Hidden elements, scripts, styles, forms controls
and embedded media are skipped; headings, lists, quotes, code blocks and tables keep their
shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import lxml.html  # type: ignore[import-untyped,unused-ignore]
from lxml import etree  # type: ignore[import-untyped,unused-ignore]

__all__ = ["html_fragment_to_text", "parse_html", "render_element", "visible_text_length"]

_SKIP = frozenset(
    {
        "script", "style", "noscript", "template", "head", "title", "meta", "link", "svg",
        "math", "iframe", "frame", "frameset", "object", "embed", "canvas", "video", "audio",
        "picture", "img", "source", "track", "map", "input", "select", "option", "button",
        "textarea", "datalist", "dialog",
    }
)  # fmt: skip
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dir",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2",
        "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "main",
        "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
        "th", "thead", "tr", "ul", "caption",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`", "kbd": "`"}
_BREAK = "\x1e"  # stands for <br> until inline text is tidied; source newlines are spaces
_PARSER = lxml.html.HTMLParser(
    collect_ids=False, default_doctype=False, encoding="utf-8", remove_comments=True,
    remove_pis=True,
)  # fmt: skip


def parse_html(text: str) -> lxml.html.HtmlElement | None:
    """Parse a whole document; None when there is nothing to parse."""
    data = text.encode("utf-8", errors="replace")
    if not data.strip():
        return None
    try:
        root = lxml.html.document_fromstring(data, parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None
    return root


def html_fragment_to_text(fragment: str, *, markdown: bool) -> str:
    """Render an HTML fragment (a feed description, say) as text."""
    if "<" not in fragment:
        return " ".join(fragment.split())
    root = parse_html(f"<html><body><div>{fragment}</div></body></html>")
    return "" if root is None else render_element(root, markdown=markdown)


def _is_hidden(element: lxml.html.HtmlElement) -> bool:
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    style = element.get("style")
    if not style or "none" not in style:
        return False
    return re.search(r"display\s*:\s*none", style) is not None


def visible_text_length(root: lxml.html.HtmlElement) -> int:
    """Characters of text a reader would see on the page, whitespace excluded."""
    body = root.find("body")
    if body is None:
        body = root
    total = 0
    stack = [body]
    while stack:
        element = stack.pop()
        tag = element.tag
        if not isinstance(tag, str) or tag in _SKIP or _is_hidden(element):
            continue
        if element.text:
            total += len("".join(element.text.split()))
        for child in element:
            if child.tail:
                total += len("".join(child.tail.split()))
            stack.append(child)
    return total


def render_element(element: lxml.html.HtmlElement, *, markdown: bool) -> str:
    """Render ``element`` and its descendants as Markdown (or plain text), blocks apart."""
    body = element.find("body") if element.tag == "html" else element
    blocks = _Renderer(markdown).blocks(element if body is None else body)
    return "\n\n".join(blocks).strip()


class _Renderer:
    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown

    def blocks(self, element: lxml.html.HtmlElement) -> list[str]:
        """The blocks inside ``element``: its own inline text grouped into paragraphs."""
        out: list[str] = []
        inline: list[str] = []

        def flush() -> None:
            text = _tidy_inline("".join(inline))
            if text:
                out.append(text)
            inline.clear()

        if element.text:
            inline.append(element.text)
        for child in element:
            tag = child.tag
            if isinstance(tag, str) and tag not in _SKIP and not _is_hidden(child):
                if tag in _BLOCK or self._holds_blocks(child):
                    flush()
                    out.extend(self.block(child))
                elif tag == "br":
                    inline.append(_BREAK)
                else:
                    inline.append(self.inline(child))
            if child.tail:
                inline.append(child.tail)
        flush()
        return out

    def block(self, element: lxml.html.HtmlElement) -> list[str]:
        tag = str(element.tag)
        handler: Callable[[lxml.html.HtmlElement], list[str]] | None = {
            "ul": self._list,
            "ol": self._list,
            "menu": self._list,
            "dir": self._list,
            "pre": self._pre,
            "blockquote": self._quote,
            "table": self._table,
            "hr": self._rule,
        }.get(tag)
        if handler is not None:
            return handler(element)
        if tag in _HEADINGS:
            text = _tidy_inline(self.inline(element)).replace("\n", " ")
            if not text:
                return []
            return [f"{'#' * _HEADINGS[tag]} {text}" if self.markdown else text]
        if tag == "dt" and self.markdown:
            text = _tidy_inline(self.inline(element))
            return [f"**{text}**"] if text else []
        return self.blocks(element)

    def inline(self, element: lxml.html.HtmlElement) -> str:
        parts: list[str] = [element.text or ""]
        for child in element:
            tag = child.tag
            if isinstance(tag, str) and tag not in _SKIP and not _is_hidden(child):
                parts.append(_BREAK if tag == "br" else self.inline(child))
            parts.append(child.tail or "")
        text = "".join(parts)
        mark = _EMPHASIS.get(str(element.tag)) if self.markdown else None
        if mark and text.strip():
            lead = text[: len(text) - len(text.lstrip())]
            trail = text[len(text.rstrip()) :]
            return f"{lead}{mark}{text.strip()}{mark}{trail}"
        return text

    def _holds_blocks(self, element: lxml.html.HtmlElement) -> bool:
        return any(
            isinstance(node.tag, str) and node.tag in _BLOCK for node in element.iterdescendants()
        )

    def _list(self, element: lxml.html.HtmlElement) -> list[str]:
        lines: list[str] = []
        number = int(element.get("start", "1")) if element.get("start", "").isdigit() else 1
        for child in element:
            if not isinstance(child.tag, str) or child.tag in _SKIP or _is_hidden(child):
                continue
            inner = self.block(child) if child.tag in _BLOCK else [_tidy_inline(self.inline(child))]
            inner = [block for block in inner if block]
            if not inner:
                continue
            if child.tag != "li":
                lines.extend(inner)
                continue
            marker = f"{number}. " if element.tag == "ol" else "- "
            number += 1
            pad = " " * len(marker)
            body = "\n".join(inner).split("\n")
            lines.append(marker + body[0])
            lines.extend(pad + line if line else line for line in body[1:])
        return ["\n".join(lines)] if lines else []

    def _pre(self, element: lxml.html.HtmlElement) -> list[str]:
        code = element.text_content().strip("\n")
        if not code.strip():
            return []
        return [f"```\n{code}\n```" if self.markdown else code]

    def _quote(self, element: lxml.html.HtmlElement) -> list[str]:
        inner = "\n\n".join(self.blocks(element))
        if not inner:
            return []
        if not self.markdown:
            return [inner]
        return ["\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))]

    def _table(self, element: lxml.html.HtmlElement) -> list[str]:
        rows: list[list[str]] = []
        for row in element.iter("tr"):
            cells = [
                _tidy_inline(self.inline(cell)).replace("\n", " ").replace("|", "\\|")
                for cell in row
                if isinstance(cell.tag, str) and cell.tag in ("td", "th")
            ]
            if any(cells):
                rows.append(cells)
        if not rows:
            return []
        if not self.markdown:
            return ["\n".join(" | ".join(cells) for cells in rows)]
        width = max(len(cells) for cells in rows)
        padded = [cells + [""] * (width - len(cells)) for cells in rows]
        lines = ["| " + " | ".join(cells) + " |" for cells in padded]
        lines.insert(1, "|" + " --- |" * width)
        return ["\n".join(lines)]

    def _rule(self, element: lxml.html.HtmlElement) -> list[str]:
        return ["---"] if self.markdown else []


def _tidy_inline(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split(_BREAK))
    return "\n".join(line for line in lines if line)
