"""A conversation's budget in real Chromium: the header shows the limits its owner set,
then follows the turn live to spent/limit, and the run's card says the same."""

from __future__ import annotations

import re
from pathlib import Path

from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect


def _list() -> dict[str, object]:
    return {"name": "fs_list", "args": {"uri": "data://"}}


def test_the_header_and_the_run_card_show_spent_against_limit(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))
    model = script(tmp_path, {"tool_calls": [_list(), _list()]}, {"text": "Done."})
    rt = server.platform.runtime
    conversation = server.run(rt.start_conversation(model=model, profile="auto"))
    limits = {"tool_calls": 5, "per_tool": {"fs_list": 1}}
    server.run(rt.set_conversation_budget(conversation.id, limits))

    page.goto(f"{server.base_url}/ui/c/{conversation.id}")
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    header = page.locator("#budget")
    expect(header).to_have_text("budget limits tool_calls 5 · per_tool.fs_list 1")
    box = page.locator("#composer textarea")
    box.fill("go")
    box.press("Enter")

    spent = "tool_calls 1/5 · per_tool.fs_list 1/1"
    expect(page.locator("#timeline .answer").last).to_have_text("Done.")
    expect(page.locator("#timeline .ended .budget")).to_have_text(f"· budget {spent}")
    expect(header).to_have_text(f"budget {spent}")  # live, without a reload
    refused = page.locator("article.tool-fs_list", has_text="Refused by the run's budget")
    expect(refused).to_have_count(1)  # of the two calls, one ran
