"""Rendering for the web UI: the Jinja2 environment, Markdown answers, escaped tool output.

Model answers are Markdown rendered by markdown-it-py (raw HTML off) and then sanitised by
nh3, so nothing a model writes can run in the page. A Markdown image is shown only when
Corral itself serves it (a path on this server); any other image is shown as a link, so
a page never fetches an address a model chose (injected instructions could carry data out
in its query). Tool output is never Markdown: the templates print it as escaped text
inside ``<pre>``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import nh3
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

__all__ = ["TEMPLATES", "markdown", "templates"]

TEMPLATES = Path(__file__).parent / "templates"

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def served_here(src: str) -> bool:
    """Whether ``src`` is a path on this server (not another host, not a scheme)."""
    return src.startswith("/") and not src.startswith(("//", "/\\"))


def _image(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if served_here(src):
        return f'<img src="{escape(src)}" alt="{escape(alt)}">'
    return f'<a href="{escape(src)}">{escape(alt or src)}</a>'


_markdown.add_render_rule("image", _image)


def markdown(text: str | None) -> Markup:
    """``text`` as sanitised HTML: Markdown rendered, then cleaned by nh3."""
    html = _markdown.render(text or "")
    cleaned = nh3.clean(html, link_rel="noopener noreferrer nofollow")
    return Markup(cleaned)  # sanitised by nh3 just above


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _when(value: str | datetime | None) -> str:
    if value is None:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M")


def _size(count: int | float | None) -> str:
    if count is None:
        return ""
    size = float(count)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _web_link(url: str | None) -> str:
    """``url`` when it is an http(s) address; otherwise an inert ``#`` (no script URLs)."""
    text = (url or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else "#"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["pretty"] = _pretty
    env.filters["when"] = _when
    env.filters["size"] = _size
    env.filters["web_link"] = _web_link
    return env


templates = _environment()
"""The one Jinja2 environment of the UI (autoescaping on for every template)."""
