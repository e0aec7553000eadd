"""The approval card of an ``execute`` call offers to remember the answer."""

from __future__ import annotations

from typing import Any

from corral.runtime.timeline import TimelineRow
from corral.server.ui.render import templates
from corral.server.ui.timeline import TimelineView


def _waiting_card(tool: str) -> str:
    rows: list[dict[str, Any]] = [
        {"kind": "tool_call", "data": {"tool": tool, "args": {"command": "git log | head"}}},
        {"kind": "card", "data": {"card": "waiting", "wait": {"kind": "approval", "id": "ap_1"}}},
    ]
    view = TimelineView.of(
        [
            TimelineRow(seq=n, kind=row["kind"], data=row["data"], call_id="c1")
            for n, row in enumerate(rows, start=1)
        ]
    )
    return templates.get_template("_entry.html").render(
        entry=view.entries[0], who=None, conversation_id="c"
    )


def test_an_execute_approval_offers_once_exact_family_and_a_scope() -> None:
    html = _waiting_card("execute")
    assert '<select name="remember"' in html and '<select name="scope"' in html
    assert 'value="family"' in html and 'value="exact"' in html and 'value="user"' in html
    assert '<select name="remember"' not in _waiting_card("web_fetch")
