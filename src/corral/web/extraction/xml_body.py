"""XML bodies: RSS and Atom feeds as a list of items, anything else pretty-printed.

Parsing never resolves entities, loads DTDs or touches the network, so a hostile document
cannot read local files (XXE) or expand itself into gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree  # type: ignore[import-untyped,unused-ignore]

from corral.web.extraction.html_text import html_fragment_to_text

__all__ = ["NotXml", "XmlRendering", "render_xml"]

_PARSER = etree.XMLParser(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    huge_tree=False,
    remove_blank_text=True,
    remove_comments=True,
    remove_pis=True,
)
_ATOM = "{http://www.w3.org/2005/Atom}"
_RSS1 = "{http://purl.org/rss/1.0/}"
_CONTENT_ENCODED = "{http://purl.org/rss/1.0/modules/content/}encoded"
_DC_DATE = "{http://purl.org/dc/elements/1.1/}date"


class NotXml(ValueError):
    """The body is not well-formed XML."""


@dataclass(frozen=True, slots=True)
class XmlRendering:
    text: str
    feed: bool
    title: str | None = None
    root_tag: str = ""


@dataclass(frozen=True, slots=True)
class _Item:
    title: str
    link: str
    date: str
    summary: str


def parse_xml(text: str) -> etree._Element:
    """Parse a document safely; raises :class:`NotXml`."""
    data = text.lstrip("\ufeff").encode("utf-8")
    if data.lstrip().startswith(b"<?xml"):
        # the text is already decoded; a stale encoding declaration must not re-decode it
        end = data.find(b"?>")
        data = data[end + 2 :] if end != -1 else data
    try:
        root = etree.fromstring(data, parser=_PARSER)
    except etree.XMLSyntaxError as err:
        raise NotXml(str(err)) from None
    if root is None:
        raise NotXml("the document is empty")
    return root


def root_is_html(root: etree._Element) -> bool:
    """An XHTML document, which belongs to the HTML chain."""
    return str(etree.QName(root).localname).lower() == "html"


def render_xml(root: etree._Element, *, markdown: bool) -> XmlRendering:
    """Render a parsed document: a feed as its items, anything else indented."""
    name = etree.QName(root).localname
    feed = _read_feed(root, name)
    if feed is not None:
        title, description, items = feed
        return XmlRendering(
            text=_feed_text(title, description, items, markdown=markdown),
            feed=True,
            title=title or None,
            root_tag=name,
        )
    etree.indent(root, space="  ")
    return XmlRendering(text=etree.tostring(root, encoding="unicode"), feed=False, root_tag=name)


def _read_feed(root: etree._Element, name: str) -> tuple[str, str, list[_Item]] | None:
    if name == "rss":
        channel = root.find("channel")
        if channel is None:
            return None
        items = [_rss_item(item) for item in channel.findall("item")]
        return _text(channel, "title"), _text(channel, "description"), items
    if name == "RDF":
        channel = root.find(f"{_RSS1}channel")
        items = [_rss_item(item, ns=_RSS1) for item in root.iter(f"{_RSS1}item")]
        if channel is None and not items:
            return None
        title = _text(channel, f"{_RSS1}title") if channel is not None else ""
        about = _text(channel, f"{_RSS1}description") if channel is not None else ""
        return title, about, items
    if name == "feed" and str(root.tag).startswith(_ATOM):
        items = [_atom_entry(entry) for entry in root.findall(f"{_ATOM}entry")]
        return _text(root, f"{_ATOM}title"), _text(root, f"{_ATOM}subtitle"), items
    return None


def _rss_item(item: etree._Element, ns: str = "") -> _Item:
    summary = _text(item, _CONTENT_ENCODED) or _text(item, f"{ns}description")
    return _Item(
        title=_text(item, f"{ns}title"),
        link=_text(item, f"{ns}link") or _text(item, "guid"),
        date=_text(item, "pubDate") or _text(item, _DC_DATE),
        summary=summary,
    )


def _atom_entry(entry: etree._Element) -> _Item:
    link = ""
    for candidate in entry.findall(f"{_ATOM}link"):
        if candidate.get("rel", "alternate") == "alternate":
            link = candidate.get("href", "")
            break
    summary_element = entry.find(f"{_ATOM}summary")
    if summary_element is None:
        summary_element = entry.find(f"{_ATOM}content")
    summary = ""
    if summary_element is not None:
        if summary_element.get("type") == "xhtml":
            summary = etree.tostring(summary_element, method="html", encoding="unicode")
        else:
            summary = "".join(summary_element.itertext())
    return _Item(
        title=_text(entry, f"{_ATOM}title"),
        link=link,
        date=_text(entry, f"{_ATOM}published") or _text(entry, f"{_ATOM}updated"),
        summary=summary,
    )


def _text(parent: etree._Element, path: str) -> str:
    element = parent.find(path)
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def _feed_text(title: str, description: str, items: list[_Item], *, markdown: bool) -> str:
    blocks: list[str] = []
    if title:
        blocks.append(f"# {title}" if markdown else title)
    if description:
        blocks.append(html_fragment_to_text(description, markdown=markdown))
    blocks.append(f"{len(items)} item(s)")
    for number, item in enumerate(items, start=1):
        heading = item.title or "(untitled)"
        lines = [f"## {number}. {heading}" if markdown else f"{number}. {heading}"]
        if item.link:
            lines.append(f"link: {item.link}")
        if item.date:
            lines.append(f"date: {item.date}")
        summary = html_fragment_to_text(item.summary, markdown=markdown) if item.summary else ""
        if summary:
            lines.append("")
            lines.append(summary)
        blocks.append("\n".join(lines))
    return "\n\n".join(block for block in blocks if block)
