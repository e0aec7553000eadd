"""What reaches the page: sanitised Markdown for answers, escaped text for tool output,
and the fold of a timeline into cards."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from corral.runtime.timeline import TimelineRow
from corral.server.ui.render import markdown, templates
from corral.server.ui.timeline import CallCard, TimelineView


def _row(seq: int, kind: str, data: dict[str, Any], call_id: str | None = None) -> TimelineRow:
    return TimelineRow(seq=seq, kind=kind, data=data, call_id=call_id)  # type: ignore[arg-type]


class _Elements(HTMLParser):
    """Every element and attribute the browser would build from some HTML."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _dangerous(html: str) -> list[str]:
    bad = []
    for tag, attrs in _Elements(html).found:
        if tag in ("script", "iframe", "svg", "object", "embed", "style"):
            bad.append(tag)
        for name, value in attrs.items():
            if name.startswith("on"):
                bad.append(f"{tag}[{name}]")
            if name in ("href", "src") and "script:" in (value or "").lower().replace(" ", ""):
                bad.append(f"{tag}[{name}={value}]")
    return bad


def test_markdown_answers_are_sanitised() -> None:
    html = str(markdown("**bold** [site](https://example.org) <script>alert(1)</script>"))
    assert "<strong>bold</strong>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">site</a>' in html
    evasions = [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "<a href='java&#115;cript:alert(1)'>x</a>",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java&#115;cript:alert(1))",
        "[x](<javascript:alert(1)>)",
        "![x](javascript:alert(1))",
        "<javascript:alert(1)>",
        '<svg onload="alert(1)">',
        "<iframe src=//evil>",
        "```\n</code><script>alert(1)</script>\n```",
        "[x]: javascript:alert(1)\n\n[x]",
    ]
    for text in evasions:
        assert _dangerous(str(markdown(text))) == [], text
    assert _dangerous('<img src=x onerror="y"><a href="javascript:z">') == [
        "img[onerror]",
        "a[href=javascript:z]",
    ]


def test_only_images_served_here_are_shown_and_others_are_links() -> None:
    outside = "http://127.0.0.1:9/pixel.png?leak=secret"
    html = str(markdown(f"![pixel]({outside}) ![pic](/ui/c/c_1/files/a.png) ![y](//evil/a.png)"))
    images = [attrs for tag, attrs in _Elements(html).found if tag == "img"]
    assert images == [{"src": "/ui/c/c_1/files/a.png", "alt": "pic"}]
    links = [attrs["href"] for tag, attrs in _Elements(html).found if tag == "a"]
    assert links == [outside.replace("&", "&amp;"), "//evil/a.png"]


def test_tool_output_is_escaped_text() -> None:
    view = TimelineView.of(
        [
            _row(1, "tool_call", {"tool": "execute", "args": {"command": "<b>cmd</b>"}}, "c1"),
            _row(
                2,
                "tool_result",
                {
                    "tool": "execute",
                    "result": {
                        "content": [{"type": "text", "text": "<script>alert(1)</script>"}],
                        "data": {"exit_code": 0, "command": "<b>cmd</b>"},
                    },
                },
                "c1",
            ),
        ]
    )
    html = templates.get_template("_entry.html").render(
        entry=view.entries[0], who=None, conversation_id="c"
    )
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>cmd</b>" not in html and "&lt;b&gt;cmd&lt;/b&gt;" in html


def test_a_call_folds_its_wait_decision_and_result_into_one_card() -> None:
    view = TimelineView()
    first = view.add(_row(1, "tool_call", {"tool": "execute", "args": {}}, "c1"))
    assert first is not None and first.new
    card = view.calls["c1"]
    assert card.state == "running"
    waiting = {"card": "waiting", "wait": {"kind": "approval", "id": "ap_1"}}
    change = view.add(_row(2, "card", waiting, "c1"))
    assert change is not None and not change.new and change.entry is card
    assert card.state == "waiting" and card.wait_kind == "approval" and card.wait_id == "ap_1"
    view.add(_row(3, "card", {"card": "decided", "decision": "approve", "by": "ana"}, "c1"))
    assert card.state == "running" and card.wait_kind is None
    view.add(_row(4, "tool_result", {"result": {"is_error": True, "content": []}}, "c1"))
    assert card.state == "error"
    assert [type(e) for e in view.entries] == [CallCard] and view.last_seq == 4


def test_a_compaction_card_follows_its_toggles_and_empty_turns_are_left_out() -> None:
    view = TimelineView()
    assert view.add(_row(1, "model_turn", {"text": "  "})) is None
    view.add(_row(2, "card", {"card": "compaction", "id": "cp_1", "action": "remove"}, "c9"))
    compaction = view.compactions["cp_1"]
    assert compaction.applied
    change = view.add(_row(3, "card", {"card": "compaction_applied", "id": "cp_1"}))
    assert change is not None and not change.new and not compaction.applied
    assert view.add(_row(4, "card", {"card": "compaction_applied", "id": "cp_x"})) is None


def _card_html(tool: str, args: dict[str, Any], result: dict[str, Any]) -> str:
    view = TimelineView.of(
        [
            _row(1, "tool_call", {"tool": tool, "args": args}, "c1"),
            _row(2, "tool_result", {"tool": tool, "result": result}, "c1"),
        ]
    )
    return templates.get_template("_entry.html").render(
        entry=view.entries[0], who=None, conversation_id="c"
    )


def test_cards_show_their_tools_data() -> None:
    state = {
        "goal": {"text": "Ship it", "conditions": [{"text": "tests pass", "met": True}]},
        "steps": [{"id": 1, "text": "write <code>", "status": "done"}],
    }
    todos = _card_html("todos", {}, {"content": [], "data": {"state": state}})
    assert "Ship it" in todos and "☑ tests pass" in todos and "write &lt;code&gt;" in todos
    search = {
        "strategy": "auto",
        "mode": "standard",
        "providers": [{"provider": "brave", "status": "dropped", "reason": "no key", "kept": 0}],
        "fallback": None,
        "results": [
            {"title": "Hit", "url": "https://example.org/a", "published": "2026-01-02"},
            {"title": "Bad", "url": "javascript:alert(1)", "published": "unknown"},
        ],
    }
    html = _card_html("web_search", {"query": "q"}, {"content": [], "data": search})
    assert "brave: dropped (no key)" in html and "2026-01-02" in html
    assert 'href="https://example.org/a"' in html
    assert _dangerous(html) == [] and 'href="#"' in html
    image = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}
    audio = {"type": "audio", "media_type": "audio/wav", "data": "UklGRg=="}
    media = _card_html("fs_read", {"uri": "data://x.png"}, {"content": [image, audio]})
    assert '<img class="media"' in media and "data:image/png;base64,iVBORw0KGgo=" in media
    assert "<audio controls" in media


def test_a_cards_hooks_are_their_own_part() -> None:
    blocked = {"hook": "block_rm_rf.sh", "event": "PreToolUse", "outcome": "deny",
               "reason": "rm -rf <is> refused"}  # fmt: skip
    noted = {"hook": "note.py", "event": "PostToolUse", "outcome": "context"}
    result = {
        "is_error": True,
        "content": [{"type": "text", "text": "Error [hook_blocked]: ..."}],
        "data": {"hooks": [blocked, noted]},
    }
    html = _card_html("execute", {"command": "rm -rf /"}, result)
    assert '<ul class="hooks">' in html
    assert (
        '<li class="hook hook-deny">blocked by hook block_rm_rf.sh (PreToolUse): '
        "rm -rf &lt;is&gt; refused</li>"
    ) in html
    assert '<li class="hook hook-context">context added by hook note.py (PostToolUse)</li>' in html
    plain = _card_html("execute", {"command": "ls"}, {"content": [], "data": {}})
    assert 'class="hooks"' not in plain
