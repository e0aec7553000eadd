"""Pages whose content only appears once a browser runs their scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.web import extract_document

URL = "https://app.example/dashboard"
HTML = "text/html"
ARTICLE = (Path(__file__).parent / "fixtures" / "extraction" / "article.html").read_bytes()

SHELLS = {
    "mount point and noscript plea": b"""<!doctype html><html><head><title>Acme</title>
        <script defer src="/static/js/main.4f2a.js"></script></head>
        <body><noscript>You need to enable JavaScript to run this app.</noscript>
        <div id="root"></div></body></html>""",
    "nothing but scripts and a spinner": b"""<html><head><title>Loading</title></head><body>
        <div class="spinner">Loading&hellip;</div>
        <script src="/vendor.js"></script><script src="/app.js"></script></body></html>""",
    "custom element root": b"""<html><head><base href="/"><title>Portal</title></head><body>
        <portal-root></portal-root><script src="runtime.js" type="module"></script>
        <script src="main.js" type="module"></script></body></html>""",
    "chrome around an empty main": b"""<html><head><title>Shop</title></head><body>
        <header><a href="/">Shop</a> <a href="/cart">Cart</a></header>
        <main id="app"><div class="placeholder"></div></main>
        <footer>Terms and conditions apply.</footer>
        <script src="/bundle.js"></script></body></html>""",
    "noscript notice in the head": b"""<html><head><title>Board</title>
        <noscript><p>This site requires JavaScript. Please turn it on.</p></noscript>
        </head><body><div class="shell"></div></body></html>""",
}


@pytest.mark.parametrize("name", sorted(SHELLS))
def test_script_shells_are_reported_as_needing_javascript(name: str) -> None:
    result = extract_document(SHELLS[name], HTML, url=URL)
    assert result.js_only is True, name
    note = next(note for note in result.notes if note.startswith("page needs JavaScript"))
    assert "does not run JavaScript" in note
    assert "visible characters" in note
    assert "page needs JavaScript" in "\n".join(result.header_lines())


def test_the_note_names_the_evidence() -> None:
    result = extract_document(SHELLS["mount point and noscript plea"], HTML, url=URL)
    (note,) = result.notes
    assert "<div id='root'>" in note
    assert "You need to enable JavaScript to run this app." in note
    assert "1 script tag(s)" in note


def test_embedded_json_state_is_pointed_out() -> None:
    state = b'{"props": {"items": [' + b",".join(b'{"name": "otter %d"}' % i for i in range(80))
    body = (
        b'<html><body><div id="__app"></div><script id="__STATE__" type="application/json">'
        + state
        + b"]}}</script><script src='/app.js'></script></body></html>"
    )
    result = extract_document(body, HTML, url=URL)
    assert result.js_only
    assert "<script id='__STATE__'>" in result.notes[0]
    assert "format 'raw'" in result.notes[0]


def test_server_rendered_article_with_scripts_and_a_js_notice_is_not_flagged() -> None:
    body = ARTICLE.replace(
        b"<main>",
        b"<main><noscript>Please enable JavaScript to view the comments.</noscript>"
        b'<div id="fb-root"></div><script src="/comments.js"></script>',
    )
    result = extract_document(body, HTML, url=URL)
    assert result.js_only is False
    assert result.notes == ()


def test_a_short_static_page_is_not_flagged() -> None:
    body = b"<html><body><h1>Closed</h1><p>The shop is closed for the holidays.</p></body></html>"
    result = extract_document(body, HTML, url=URL)
    assert result.js_only is False
    assert "closed for the holidays" in result.text


def test_a_short_page_with_analytics_but_real_text_is_not_flagged() -> None:
    body = (
        b"<html><head><script src='https://stats.example/a.js'></script></head><body>"
        b"<div class='wrap'><h1>Opening hours</h1><p>Monday to Friday, nine to five; "
        b"closed on public holidays.</p></div></body></html>"
    )
    assert extract_document(body, HTML, url=URL).js_only is False


def test_raw_format_skips_detection() -> None:
    result = extract_document(SHELLS["custom element root"], HTML, url=URL, format="raw")
    assert result.js_only is False
    assert "<portal-root>" in result.text
