"""The web UI in real Chromium against a real server: sign-in, a streamed chat with an
execute card, an approval that survives a reload, a question answered in place, Show full,
Kill from the Shell tab, a member's limits and CSRF, a pairing approved in the Channels
panel. Each test leaves screenshots in its tmp path, and no page may reach a host but the
server (checked by the session fixture)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from corral.runtime.compaction import Compactions
from corral.shell.service import ShellService
from tests.channels.conftest import tg_message
from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect

_RECORD_LIVE_TEXT = """() => {
  window.liveTexts = [];
  const live = document.getElementById("live");
  new MutationObserver(() => window.liveTexts.push(live.textContent))
    .observe(live, {childList: true, subtree: true, characterData: true});
}"""


def _sign_in(session: Session, server: LiveServer, user: str | None = None) -> None:
    session.page.goto(server.link(user))
    expect(session.page).to_have_url(re.compile(r"/ui$"))


def _start(session: Session, model: str, profile: str, title: str) -> str:
    page = session.page
    page.fill("#new-conversation input[name=model]", model)
    page.select_option("#new-conversation select[name=profile]", profile)
    page.fill("#new-conversation input[name=title]", title)
    page.click("#new-conversation button[type=submit]")
    expect(page).to_have_url(re.compile(r"/ui/c/c_\w+$"))
    _wait_live(page)
    return str(page.url.rsplit("/", 1)[1])


def _wait_live(page: Any) -> None:
    expect(page.locator("body[data-live=open]")).to_have_count(1)


def _send(page: Any, text: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(text)
    box.press("Enter")


def test_sign_in_and_a_streamed_turn_with_a_live_execute_card(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    link = server.link()
    page.goto(link)
    expect(page.locator("#conversation-list")).to_be_visible()
    cookie = next(c for c in session.context.cookies() if c["name"] == "corral_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    again = page.goto(link)
    assert again is not None and again.status == 401  # one-time: spent by the first visit

    page.goto(server.base_url + "/ui")
    waiting = "until [ -e go ]; do sleep 0.05; done"
    model = script(
        tmp_path,
        {
            "text": "Streaming this answer word by word for you.",
            "tool_calls": [
                {
                    "name": "execute",
                    "args": {
                        "command": f"echo first; {waiting}; echo second",
                        "reason": "Print two lines around a go signal.",
                    },
                }
            ],
        },
        {"text": "All **done**."},
    )
    _start(session, model, "auto", "streaming")
    page.evaluate(_RECORD_LIVE_TEXT)
    _send(page, "run it")
    expect(page.locator("#timeline .bubble.user")).to_have_text("run it")

    card = page.locator("article.tool-execute")
    expect(card.locator("pre.output.live")).to_contain_text("first")
    expect(card).to_have_attribute("data-state", "running")
    (server.data_dir / "drive" / "go").write_text("")
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("pre.output")).to_contain_text("second")
    expect(card.locator(".exit")).to_have_text("exit code 0")
    expect(card.locator(".reason")).to_have_text("Print two lines around a go signal.")
    expect(page.locator("#timeline .answer strong")).to_have_text("done")
    expect(page.locator("#timeline .ended")).to_contain_text("finished")

    seen = page.evaluate("window.liveTexts")
    full = "Streaming this answer word by word for you."
    partial = [t for t in seen if t and full.startswith(t) and t != full]
    assert len(partial) >= 2, f"the answer did not arrive word by word: {seen}"

    bubbles = page.locator("#timeline .bubble.user").count()
    box = page.locator("#composer textarea")
    box.fill("line one")
    box.press("Shift+Enter")
    box.type("line two")
    assert box.input_value() == "line one\nline two"
    assert page.locator("#timeline .bubble.user").count() == bubbles
    page.screenshot(path=str(tmp_path / "chat-with-cards.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "chat-phone.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width}px"


def test_an_approval_survives_a_reload_and_resumes_live(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    model = script(
        tmp_path,
        {
            "tool_calls": [
                {
                    "name": "execute",
                    "args": {"command": "echo approved > approved.txt", "reason": "Write a file."},
                }
            ]
        },
        {"text": "Written after approval."},
    )
    _start(session, model, "balanced", "approval")
    _send(page, "write it")
    footer = page.locator("article.tool-execute footer.approval")
    expect(footer).to_be_visible()
    footer.locator("input[name=note]").fill("go ahead")
    page.reload()
    _wait_live(page)
    expect(footer).to_be_visible()
    expect(footer.locator("input[name=note]")).to_have_value("go ahead")
    page.screenshot(path=str(tmp_path / "approval.png"), full_page=True)
    footer.locator("button.approve").click()
    expect(page.locator("#timeline .answer").last).to_have_text("Written after approval.")
    card = page.locator("article.tool-execute")
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator("footer.decided")).to_contain_text("approved by")
    expect(card.locator("footer.decided")).to_contain_text("go ahead")
    assert (server.data_dir / "drive" / "approved.txt").read_text() == "approved\n"


def test_stop_ends_the_turn_and_its_command(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    command = {"command": "echo waiting; sleep 300", "reason": "Wait a long time."}
    model = script(tmp_path, {"tool_calls": [{"name": "execute", "args": command}]})
    _start(session, model, "auto", "stop")
    _send(page, "wait")
    card = page.locator("article.tool-execute")
    expect(card.locator("pre.output.live")).to_contain_text("waiting")
    page.locator("#runbar button.danger").click()
    expect(page.locator("#timeline .ended")).to_contain_text("stopped")
    expect(page.locator("#timeline .ended")).not_to_contain_text("stopped · stopped")
    expect(card).to_have_attribute("data-state", "stopped")  # a person ended it: no error
    expect(card.locator("header .state")).to_have_text("stopped")
    expect(card.locator("pre.output")).to_contain_text("process group was ended")
    expect(page.locator("#runbar button")).to_have_count(0)


def test_a_question_is_answered_in_place(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    questions = [
        {"question": "Which colour?", "options": ["red", "blue"]},
        {"question": "Which sizes?", "options": ["S", "M", "L"], "multi_select": True},
        {"question": "Why?"},
    ]
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "ask_question", "args": {"questions": questions}}]},
        [{"when_result_contains": "blue", "text": "Blue it is."}, {"text": "No blue."}],
    )
    _start(session, model, "auto", "question")
    _send(page, "ask me")
    form = page.locator("article.tool-ask_question form.questions")
    expect(form).to_be_visible()
    form.get_by_label("blue").check()
    form.get_by_label("S", exact=True).check()
    form.get_by_label("L", exact=True).check()
    form.locator("input[name=text2]").fill("because")
    form.locator("button[type=submit]").click()
    expect(page.locator("article.tool-ask_question .decision")).to_contain_text("blue")
    expect(page.locator("#timeline .answer").last).to_have_text("Blue it is.")
    page.screenshot(path=str(tmp_path / "question.png"), full_page=True)


def test_show_full_switches_a_compaction_off_and_on(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    compact = {
        "action": "summarize",
        "targets": [{"sequence": 2}],
        "summary": "A long answer, in short.",
        "reason": "It was long.",
    }
    model = script(
        tmp_path,
        {"text": "a long answer " * 40},
        {"tool_calls": [{"name": "compact_history", "args": compact}]},
        {"text": "Trimmed."},
    )
    cid = _start(session, model, "auto", "compaction")
    _send(page, "first")
    expect(page.locator("#timeline .ended")).to_have_count(1)
    _send(page, "trim it")
    card = page.locator("article.compaction")
    expect(card.locator("button.toggle-full")).to_have_text("Show full")
    card.locator("button.toggle-full").click()
    expect(card.locator("button.toggle-full")).to_have_text("Trim again")
    compactions = server.platform.services.require(Compactions)
    found = server.run(compactions.list_compactions(cid, user=None))
    assert [c["applied"] for c in found] == [False]
    page.screenshot(path=str(tmp_path / "show-full.png"), full_page=True)
    card.locator("button.toggle-full").click()
    expect(card.locator("button.toggle-full")).to_have_text("Show full")


def _background(command: str) -> dict[str, Any]:
    args = {"command": command, "reason": "A long job.", "background": True}
    return {"tool_calls": [{"name": "execute", "args": args}]}


def test_kill_from_the_shell_tab_and_the_report_turn_streams_live(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    model = script(
        tmp_path,
        _background("echo started; sleep 300"),
        {"text": "It runs in the background."},
        [
            {"when_message_contains": "stopped", "text": "The shell was stopped, I see."},
            {"text": "The report did not say stopped."},
        ],
    )
    cid = _start(session, model, "auto", "shells")
    _send(page, "start it")
    expect(page.locator("#timeline .answer").first).to_have_text("It runs in the background.")

    tab = session.context.new_page()
    tab.goto(f"{server.base_url}/ui/c/{cid}/shells")
    shell = tab.locator("article.shell")
    expect(shell.locator("pre.tail")).to_contain_text("started")
    expect(shell.locator(".state")).to_have_text("running")
    tab.screenshot(path=str(tmp_path / "shell-tab.png"), full_page=True)
    shell.locator("button.kill").click()
    expect(shell.locator("p.facts").last).to_contain_text("stopped")
    expect(shell.locator(".state")).to_have_text("stopped")
    expect(shell.locator("button.kill")).to_have_count(0)
    background = server.platform.services.require(ShellService).background
    records = server.run(background.store.find(conversation_id=cid))
    assert [r.status for r in records] == ["stopped"]

    # The chat page stayed open: the platform's report and the turn it starts arrive live.
    expect(page.locator("#timeline article.report")).to_contain_text("written by the platform")
    expect(page.locator("#timeline .answer").last).to_have_text("The shell was stopped, I see.")
    page.screenshot(path=str(tmp_path / "report-live.png"), full_page=True)
    # The open page claimed the continuation within the grace: it started as the browser's.
    latest = server.run(server.platform.runtime.runs.list_runs(conversation_id=cid, limit=1))
    assert [r.trigger for r in latest] == ["browser"]


def test_another_users_shell_is_not_yours_to_stop(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    platform = server.platform
    sam_id = server.run(platform.identity.create_user("sam", "member"))
    server.run(
        platform.admin.grant_source("data", principal_kind="user", principal=sam_id, rights="rx")
    )
    model = script(tmp_path, _background("echo mine; sleep 300"), {"text": "Started."})
    turn = server.run(platform.runtime.chat("start", model=model, profile="auto", user="sam"))
    background = platform.services.require(ShellService).background
    (record,) = server.run(background.store.find(conversation_id=turn.conversation_id))
    try:
        _sign_in(session, server)
        page = session.page
        page.goto(f"{server.base_url}/ui/c/{turn.conversation_id}/shells")
        shell = page.locator("article.shell")
        expect(shell).to_contain_text("not yours to stop")
        expect(shell.locator("button.kill")).to_have_count(0)
        token = page.evaluate("JSON.parse(document.body.getAttribute('hx-headers'))")
        refused = session.context.request.post(
            f"{server.base_url}/ui/shells/{record.id}/kill", headers=token
        )
        assert refused.status == 403 and "not yours to stop" in refused.text()
    finally:
        sam = server.run(platform.caller("sam"))
        server.run(background.stop(record.id, sam))


def test_a_member_sees_only_what_their_grants_allow(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    platform = server.platform
    model = script(tmp_path, {"text": "private"})
    owned = server.run(platform.runtime.chat("secret", model=model))
    server.run(platform.identity.create_user("mia", "member"))
    token = server.run(platform.identity.create_token("mia")).token

    page = session.page
    page.goto(server.base_url + "/ui/c/" + owned.conversation_id)
    expect(page).to_have_url(re.compile(r"/ui/sign-in$"))
    page.fill("input[name=token]", "wrong")
    page.click("button[type=submit]")
    expect(page.locator("p.error")).to_contain_text("Unknown or revoked token")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/ui$"))
    expect(page.locator("#nav-settings")).to_have_count(0)
    expect(page.locator("#conversation-list")).not_to_contain_text("secret")

    denied = page.goto(server.base_url + "/ui/c/" + owned.conversation_id)
    assert denied is not None and denied.status == 404
    expect(page.locator("p.error")).to_contain_text("no conversation")
    settings = page.goto(server.base_url + "/ui/settings")
    assert settings is not None and settings.status == 403
    page.screenshot(path=str(tmp_path / "member-denied.png"), full_page=True)


def test_a_post_without_the_csrf_token_is_refused(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    _sign_in(session, server)
    request = session.context.request
    form = {"model": script(tmp_path, {"text": "x"}), "profile": "auto"}
    refused = request.post(server.base_url + "/ui/conversations", form=form, max_redirects=0)
    assert refused.status == 403
    assert "CSRF" in refused.text()
    forged = request.post(
        server.base_url + "/ui/conversations",
        form={**form, "csrf_token": "0" * 64},
        max_redirects=0,
    )
    assert forged.status == 403
    token = session.page.locator("#new-conversation input[name=csrf_token]").input_value()
    accepted = request.post(
        server.base_url + "/ui/conversations",
        form={**form, "csrf_token": token},
        max_redirects=0,
    )
    assert accepted.status == 303


def test_the_channels_panel_approves_a_pairing_and_the_sender_then_reaches_the_agent(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    telegram = server.telegram
    model = script(tmp_path, {"text": "Hello from the agent"})
    item = {
        "kind": "channel",
        "name": "tg",
        "provider": "telegram",
        "secret": telegram.token,
        "fields": {"mode": "webhook", "public_url": "https://corral.example", "model": model},
    }
    added = server.run(server.platform.call_tool("connect", {"add": [item]}))
    assert not added.is_error, added.text
    secret = telegram.method_calls("setWebhook")[-1]["secret_token"]

    def write(update_id: int, text: str) -> None:
        # The vendor's side: a signed webhook call to the server, not the browser's.
        answer = httpx.post(
            f"{server.base_url}/channels/tg/inbound",
            content=json.dumps(tg_message(update_id, text)),
            headers={"X-Telegram-Bot-Api-Secret-Token": secret},
        )
        assert answer.status_code == 200, answer.text

    write(1, "hello?")
    assert telegram.wait_for(lambda: any("pairing code is" in m["text"] for m in telegram.sent))
    code = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]

    page = session.page
    _sign_in(session, server)
    page.click("#nav-channels")
    expect(page).to_have_url(re.compile(r"/ui/channels$"))
    row = page.locator("#connections tr[data-channel=tg]")
    expect(row).to_contain_text("telegram")
    expect(row.locator(".state")).to_have_text("connected")
    expect(row).not_to_contain_text("never")  # the inbound message was seen
    assert telegram.token not in page.content() and secret not in page.content()
    pending = page.locator(f"#pairings li[data-code='{code}']")
    expect(pending).to_contain_text("@u42")
    page.screenshot(path=str(tmp_path / "channels-pending.png"), full_page=True)

    pending.locator("form.approve button[type=submit]").click()
    expect(page.locator("p.notice")).to_have_text("approved @u42")
    expect(page.locator(f"#pairings li[data-code='{code}']")).to_have_count(0)
    assert telegram.wait_for(lambda: "Paired" in telegram.sent[-1]["text"])

    write(2, "what's up?")
    assert telegram.wait_for(
        lambda: any(m["text"] == "Hello from the agent" for m in telegram.sent)
    ), telegram.sent
    page.screenshot(path=str(tmp_path / "channels-approved.png"), full_page=True)
