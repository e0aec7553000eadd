"""Recognising pages whose content only appears once a browser runs their scripts.

Single-page apps send a shell: an empty mount element, a bundle of scripts, often a
``<noscript>`` plea to enable JavaScript, and a little chrome. The detector looks at what the
shell is made of rather than at any framework's names:

* the readable content is thin (what extraction found, and what the page shows);
* and at least one sign that scripts are meant to fill it: a ``<noscript>`` notice about
  JavaScript, an empty element that is most of the body's structure, or a body that is
  nothing but scripts.

Embedded JSON state (``<script type="application/json">`` and the like) is reported, since
the content a browser would render is often sitting in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html  # type: ignore[import-untyped,unused-ignore]

__all__ = ["JsShell", "detect_js_shell"]

THIN_CONTENT_CHARS = 300
"""Below this many characters of extracted text a page counts as thin."""
EMPTY_BODY_CHARS = 30
"""Below this many visible characters (a "Loading…" line) a page has no content of its own."""
_DATA_SCRIPT_BYTES = 1024

_JS_NOTICE = re.compile(r"\bjava\s*script\b|\bjs\b", re.IGNORECASE)
_NON_CONTENT = frozenset({"script", "noscript", "style", "link", "meta", "template", "iframe"})
_DATA_TYPES = ("application/json", "application/ld+json", "application/x-json")


@dataclass(frozen=True, slots=True)
class JsShell:
    """Evidence that a page is a script-rendered shell."""

    scripts: int
    notice: str | None
    """The ``<noscript>`` text asking for JavaScript, if any."""
    mount: str | None
    """A description of the empty mount element, such as ``<div id='root'>``."""
    data_scripts: tuple[str, ...]
    """Descriptions of scripts holding embedded JSON data worth a look."""

    def note(self, visible_chars: int) -> str:
        """A note a model can act on."""
        signs = [f"{self.scripts} script tag(s)"]
        if self.mount:
            signs.append(f"an empty mount element {self.mount}")
        if self.notice:
            signs.append(f"a <noscript> notice saying {self.notice!r}")
        text = (
            "page needs JavaScript: the HTML the server sent has almost no readable content "
            f"({visible_chars} visible characters) and is a shell for scripts "
            f"({', '.join(signs)}); web_fetch does not run JavaScript, so what is shown is "
            "only the page's chrome. Look for the same content elsewhere: an API or JSON "
            "endpoint, an RSS/Atom feed, a server-rendered, AMP or print version of the page, "
            "or another source."
        )
        if self.data_scripts:
            text += (
                " The page embeds JSON data that may hold the content: "
                f"{', '.join(self.data_scripts)}; fetch again with format 'raw' to read it."
            )
        return text


def detect_js_shell(
    root: lxml.html.HtmlElement, *, extracted_chars: int, visible_chars: int
) -> JsShell | None:
    """Return the evidence when the page is a script shell, else None."""
    if extracted_chars >= THIN_CONTENT_CHARS and visible_chars >= THIN_CONTENT_CHARS:
        return None
    body = root.find("body")
    scripts = root.findall(".//script")
    notice = _noscript_notice(root)
    mount = _empty_mount(body) if body is not None else None
    code_scripts = [s for s in scripts if (s.get("type") or "").lower() not in _DATA_TYPES]
    only_scripts = bool(code_scripts) and visible_chars < EMPTY_BODY_CHARS
    if not (notice or (code_scripts and mount) or only_scripts):
        return None
    return JsShell(
        scripts=len(scripts),
        notice=notice,
        mount=mount,
        data_scripts=tuple(_data_scripts(scripts)),
    )


def _noscript_notice(root: lxml.html.HtmlElement) -> str | None:
    for element in root.iter("noscript"):
        text = " ".join(element.text_content().split())
        if not text and element.text and "<" in element.text:
            # noscript parsed in a head keeps its markup as text
            text = " ".join(
                lxml.html.fromstring(f"<div>{element.text}</div>").text_content().split()
            )
        if _JS_NOTICE.search(text):
            return text if len(text) <= 160 else text[:157] + "..."
    return None


def _empty_mount(body: lxml.html.HtmlElement) -> str | None:
    """An empty element that stands for most of the body's structure.

    Looked for among the body's children and, one level down, inside a lone wrapper. A page
    whose body has many structural children is a server-rendered page, whatever is empty in it.
    """
    level = [child for child in body if _structural(child)]
    for _ in range(2):
        if not level or len(level) > 4:
            return None
        for element in level:
            tag = str(element.tag)
            if _is_empty(element) and (element.get("id") or "-" in tag):
                ident = element.get("id")
                return f"<{tag} id={ident!r}>" if ident else f"<{tag}>"
        if len(level) != 1:
            return None
        level = [child for child in level[0] if _structural(child)]
    return None


def _structural(element: lxml.html.HtmlElement) -> bool:
    return isinstance(element.tag, str) and element.tag not in _NON_CONTENT


def _is_empty(element: lxml.html.HtmlElement) -> bool:
    if (element.text or "").strip():
        return False
    for node in element.iterdescendants():
        if not isinstance(node.tag, str):
            continue
        if node.tag in _NON_CONTENT:
            continue
        if (node.text or "").strip() or (node.tail or "").strip():
            return False
    return True


def _data_scripts(scripts: list[lxml.html.HtmlElement]) -> list[str]:
    found = []
    for script in scripts:
        kind = (script.get("type") or "").lower()
        size = len(script.text or "")
        if kind in _DATA_TYPES and size >= _DATA_SCRIPT_BYTES:
            ident = script.get("id")
            where = f"<script id={ident!r}>" if ident else f"<script type={kind!r}>"
            found.append(f"{where} ({size // 1024} KB)")
    return found[:3]
