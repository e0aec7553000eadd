"""The header's "waiting for you" list and the conversation list's marks in real Chromium:
a pending approval and an open question of two conversations are counted and linked, the
list follows a decision made on the open page and picks up one made in another
conversation, and another person sees none of them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from corral.channels import Channels
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME, CSRF_HEADER
from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect


def _parked(server: LiveServer, model: str, profile: str, title: str) -> str:
    """A new conversation titled ``title`` whose first turn parks; its id."""
    rt = server.platform.runtime
    conversation = server.run(rt.start_conversation(model=model, profile=profile, title=title))
    turn = server.run(rt.chat("go", conversation_id=conversation.id))
    assert turn.status == "parked", turn.status
    return conversation.id


def _parked_on_approval(server: LiveServer, tmp_path: Path, title: str) -> str:
    call = {"name": "execute", "args": {"command": f"echo {title}", "reason": f"Say {title}."}}
    model = script(tmp_path, {"tool_calls": [call]}, {"text": f"{title} said."})
    return _parked(server, model, "balanced", title)


def _parked_on_question(server: LiveServer, tmp_path: Path, title: str) -> str:
    questions = [{"question": "Which colour?", "options": ["red", "blue"]}]
    call = {"name": "ask_question", "args": {"questions": questions}}
    model = script(tmp_path, {"tool_calls": [call]}, {"text": "Noted."})
    return _parked(server, model, "auto", title)


def _count(page: Any) -> Any:
    return page.locator("#waiting-for-you summary .count")


def test_the_header_lists_what_waits_for_the_person_and_follows_it(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    approval = _parked_on_approval(server, tmp_path, "needs-approval")
    question = _parked_on_question(server, tmp_path, "needs-answer")
    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))

    expect(_count(page)).to_have_text("2")
    page.locator("#waiting-for-you summary").click()
    listed = page.locator("#waiting-for-you li")
    expect(listed).to_have_count(2)
    expect(listed.nth(0)).to_contain_text("approval · execute: echo needs-approval")
    expect(listed.nth(1)).to_contain_text("question · Which colour?")
    marks = page.locator("#conversation-list .conversation-state.waiting")
    expect(marks).to_have_count(2)
    expect(page.locator(f"#conversation-{approval} .conversation-state")).to_have_text(
        "waiting for you"
    )
    page.screenshot(path=str(tmp_path / "waiting-list.png"), full_page=True)

    listed.nth(0).locator("a").click()
    expect(page).to_have_url(re.compile(f"/ui/c/{approval}$"))
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    expect(_count(page)).to_have_text("2")
    page.locator("article.tool-execute footer.approval button.approve").click()
    expect(page.locator("#timeline .answer").last).to_have_text("needs-approval said.")
    expect(_count(page)).to_have_text("1")  # after the page's own rows, without a reload

    # A decision that starts waiting in another conversation shows up on its own.
    _parked_on_approval(server, tmp_path, "elsewhere")
    expect(_count(page)).to_have_text("2", timeout=30_000)

    page.goto(f"{server.base_url}/ui")
    expect(page.locator(f"#conversation-{approval} .conversation-state")).to_have_count(0)
    expect(page.locator(f"#conversation-{question} .conversation-state")).to_have_text(
        "waiting for you"
    )

    state: UiState = server.app.state.ui
    other = server.run(server.platform.identity.create_user("noa", "member"))
    cookies = {COOKIE_NAME: server.run(state.sessions.begin(other))}
    with httpx.Client(base_url=server.base_url, cookies=cookies, timeout=30) as client:
        mine = client.get("/ui/waiting").text
    assert "Nothing waits for you." in mine and 'data-count="0"' in mine


def test_a_paired_person_switches_notifications_of_new_decisions_from_the_list(
    server: LiveServer,
) -> None:
    state: UiState = server.app.state.ui
    channels = server.platform.services.require(Channels)
    ana = server.run(server.platform.identity.create_user("ana", "member"))
    cookie = server.run(state.sessions.begin(ana))
    headers = {CSRF_HEADER: state.keys.csrf_token(cookie)}
    with httpx.Client(
        base_url=server.base_url, cookies={COOKIE_NAME: cookie}, timeout=30
    ) as client:
        assert "Send them there too" not in client.get("/ui/waiting").text  # no paired chat
        sender, _ = server.run(channels.store.pending("tg", "77", "7700", "@ana", 600))
        server.run(channels.store.decide(sender.id, "approved", by="u_owner", user_id=ana))
        assert "Send them there too" in client.get("/ui/waiting").text
        refused = client.post("/ui/notify", data={"notify": "on"})
        assert refused.status_code == 403  # no CSRF token
        turned = client.post("/ui/notify", data={"notify": "on"}, headers=headers)
        assert turned.status_code == 200 and "Stop sending them" in turned.text
        assert server.run(channels.notifications(ana))["notify"] is True
        wrong = client.post("/ui/notify", data={"notify": "maybe"}, headers=headers)
        assert wrong.status_code == 422
        client.post("/ui/notify", data={"notify": "off"}, headers=headers)
        assert server.run(channels.notifications(ana))["notify"] is False
