"""The approval card of an ``execute`` call offers to remember the answer."""

from __future__ import annotations

from typing import Any

from corral.platform import Platform
from corral.runtime.timeline import TimelineRow
from corral.server.ui.render import templates
from corral.server.ui.timeline import TimelineView
from tests.runtime.conftest import ScriptWriter, call, write_script

__all__ = ["write_script"]


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


async def test_the_card_shows_the_families_remembering_would_allow(
    platform: Platform, write_script: ScriptWriter
) -> None:
    """The runtime's waiting card carries the analysis' proposal for the web card to show."""
    command = "git -C repo log --oneline -5 | head"
    model = write_script({"tool_calls": [call("execute", command=command, reason="look")]})
    turn = await platform.chat("look", model=model, profile="balanced")
    assert turn.status == "parked"
    (waiting,) = [r for r in turn.rows if r.kind == "card" and r.data["card"] == "waiting"]
    assert waiting.data["remember"]["family"] == ["git log", "head"]
    view = TimelineView.of(turn.rows)
    (card,) = [e for e in view.entries if getattr(e, "tool", None) == "execute"]
    html = templates.get_template("_entry.html").render(entry=card, who=None, conversation_id="c")
    assert "would allow: <code>git log</code>, <code>head</code>" in html
