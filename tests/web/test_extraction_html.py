"""HTML: the extraction chain, its fall-through, split articles and the output formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import readability
import trafilatura

from corral.web import extract, extract_document
from corral.web.extraction.html_chain import MIN_ACCEPT_CHARS

FIXTURES = Path(__file__).parent / "fixtures" / "extraction"
URL = "https://courier.example/otters"
ARTICLE = (FIXTURES / "article.html").read_bytes()
SPLIT = (FIXTURES / "split_article.html").read_bytes()
HTML = "text/html; charset=utf-8"

FIRST = "For the first time in nearly forty years, river otters"
LAST = "disturbed during the breeding season"
CHROME = ("Subscribe today", "Related stories", "Council approves", "Cookie settings")
COMMENT = "Wonderful news, I walk there every weekend"


def test_article_markdown_keeps_the_story_and_drops_the_chrome() -> None:
    result = extract_document(ARTICLE, HTML, url=URL)
    assert result.kind == "html"
    assert result.extractor == "trafilatura"
    assert result.title == "River otters return to the Elm valley"
    assert result.js_only is False and result.notes == ()
    assert result.encoding == "utf-8"
    assert result.original_length == len(ARTICLE)
    text = result.text
    assert FIRST in text and LAST in text
    assert "## A decade of restoration" in text
    assert "- Three weirs fitted with passes" in text
    for chrome in (*CHROME, COMMENT):
        assert chrome not in text


def test_text_format_has_no_markdown_markup() -> None:
    text = extract(ARTICLE, HTML, url=URL, format="text")
    assert FIRST in text and "A decade of restoration" in text
    assert "## " not in text and "# River" not in text


def test_raw_format_is_the_decoded_body_untouched() -> None:
    result = extract_document(ARTICLE, HTML, url=URL, format="raw")
    assert result.text == ARTICLE.decode("utf-8")
    assert result.extractor == "raw" and result.kind == "html"


def test_json_format_on_html_is_an_error_that_names_the_way_out() -> None:
    from corral.web import UnsupportedContent

    with pytest.raises(UnsupportedContent) as caught:
        extract(ARTICLE, HTML, url=URL, format="json")
    assert caught.value.code == "unsupported_content"
    assert "not JSON" in caught.value.message and "'markdown'" in caught.value.message


def _trafilatura_returns(value: str | None) -> Any:
    def fake(*args: object, **kwargs: object) -> str | None:
        return value

    return fake


@pytest.mark.parametrize("answer", [None, "", "Too short."])
def test_readability_answers_when_trafilatura_fails_or_comes_back_short(
    monkeypatch: pytest.MonkeyPatch, answer: str | None
) -> None:
    assert answer is None or len(answer) < MIN_ACCEPT_CHARS
    monkeypatch.setattr(trafilatura, "extract", _trafilatura_returns(answer))
    result = extract_document(ARTICLE, HTML, url=URL)
    assert result.extractor == "readability"
    assert FIRST in result.text and LAST in result.text
    assert "Subscribe today" not in result.text


def test_trafilatura_crash_falls_through_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> str:
        raise RuntimeError("hostile markup")

    monkeypatch.setattr(trafilatura, "extract", boom)
    assert extract_document(ARTICLE, HTML, url=URL).extractor == "readability"


def test_plain_converter_answers_when_readability_fails_as_well(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable(self: object, *args: object, **kwargs: object) -> str:
        raise readability.readability.Unparseable("no candidates")

    monkeypatch.setattr(trafilatura, "extract", _trafilatura_returns(None))
    monkeypatch.setattr(readability.Document, "summary", unreadable)
    result = extract_document(ARTICLE, HTML, url=URL)
    assert result.extractor == "html-text"
    assert FIRST in result.text and LAST in result.text
    assert "## A decade of restoration" in result.text
    assert "- Twelve kilometres of riverbank" in result.text
    # navigation and footer are dropped; scripts and styles never show
    assert "Subscribe today" not in result.text and "Cookie settings" not in result.text
    assert "dataLayer" not in result.text and "display: flex" not in result.text


def test_plain_converter_renders_every_visible_block_when_it_is_all_there_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trafilatura, "extract", _trafilatura_returns(None))
    monkeypatch.setattr(readability.Document, "summary", lambda self, **kw: "")
    body = b"""<html><body><nav><p>Only a menu here</p></nav>
        <table><tr><th>Name</th><th>Count</th></tr><tr><td>otters</td><td>3</td></tr></table>
        <pre>  indented
    code</pre><p style="display:none">hidden text</p><p hidden>also hidden</p>
        <blockquote><p>Quoted words</p></blockquote></body></html>"""
    markdown = extract_document(body, HTML, url=URL)
    assert markdown.extractor == "html-text"
    assert "| Name | Count |" in markdown.text and "| otters | 3 |" in markdown.text
    assert "```\n  indented\n    code\n```" in markdown.text
    assert "> Quoted words" in markdown.text
    assert "hidden" not in markdown.text
    text = extract(body, HTML, url=URL, format="text")
    assert "Name | Count" in text and "```" not in text and "> " not in text


def test_a_short_page_is_returned_whole_rather_than_emptied() -> None:
    body = b"<html><head><title>Hi</title></head><body><p>Back soon.</p></body></html>"
    result = extract_document(body, HTML, url=URL)
    assert result.text == "Back soon."
    assert result.title == "Hi"
    assert result.js_only is False


def test_an_empty_page_says_so() -> None:
    result = extract_document(b"<html><body></body></html>", HTML, url=URL)
    assert result.text == ""
    assert "the page has no readable text" in result.notes
    assert extract_document(b"", HTML, url=URL).notes[-1].startswith("the HTML document is empty")


def test_split_article_parts_are_joined_and_comments_are_not() -> None:
    plain = trafilatura.extract(SPLIT.decode(), include_comments=False) or ""
    assert "By February the entries grow shorter" not in plain  # what we set out to fix
    text = extract(SPLIT, HTML, url=URL)
    assert "the three keepers of the North Rock light" in text
    assert "By February the entries grow shorter" in text
    assert "had lasted to the very end" in text
    assert "SeaDog77" not in text  # same class, but inside the comments
    assert "Advertisement" not in text


def test_precision_result_that_drops_most_of_the_article_loses_to_recall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = trafilatura.extract

    def precise_but_short(*args: Any, **kwargs: Any) -> str | None:
        if kwargs.get("favor_precision"):
            return "A fragment of the story that precision mode settled on, too short to trust."
        result: str | None = original(*args, **kwargs)
        return result

    monkeypatch.setattr(trafilatura, "extract", precise_but_short)
    result = extract_document(ARTICLE, HTML, url=URL)
    assert result.extractor == "trafilatura-recall"
    assert FIRST in result.text and LAST in result.text


def test_xhtml_served_as_xml_goes_through_the_html_chain() -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>X</title></head><body><p>An XHTML page about otters.</p></body></html>"
    )
    for declared in ("application/xhtml+xml", "application/xml"):
        result = extract_document(body, declared, url=URL)
        assert result.kind == "html", declared
        assert result.text == "An XHTML page about otters."
