"""The web UI for a day's work, in real Chromium against a real server: an action's error is
shown where the person acted and a failed send keeps its text, a free-text answer may be
digits, the chat follows new rows (or marks them when the reader scrolled up), and the
wording of cards and end lines reads as English."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from tests.server.ui.conftest import LiveServer, Session, script
from tests.server.ui.test_browser import _send, _sign_in, _start, _wait_live

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect

_APPROVAL = {
    "tool_calls": [
        {"name": "execute", "args": {"command": "echo hi > hi.txt", "reason": "Write a file."}}
    ]
}


def test_a_failed_send_says_why_next_to_the_composer_and_keeps_the_text(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    _start(session, script(tmp_path, _APPROVAL, {"text": "Done."}), "balanced", "failing send")
    _send(page, "write it")
    expect(page.locator("article.tool-execute footer.approval")).to_be_visible()
    _send(page, "and one more thing")
    error = page.locator("#composer .action-error")
    expect(error).to_contain_text("approval")
    expect(page.locator("#composer textarea")).to_have_value("and one more thing")

    page.locator("article.tool-execute button.approve").click()
    expect(page.locator("#timeline .answer").last).to_have_text("Done.")
    page.locator("#composer textarea").press("Enter")  # the kept text, sent again
    expect(page.locator("#timeline .bubble.user").last).to_have_text("and one more thing")
    expect(error).to_have_count(0)
    expect(page.locator("#composer textarea")).to_have_value("")


def test_a_conversation_without_a_model_says_why_in_place(
    session: Session, server: LiveServer
) -> None:
    page = session.page
    _sign_in(session, server)
    page.fill("#new-conversation input[name=title]", "no model")
    page.click("#new-conversation button[type=submit]")
    expect(page).to_have_url(re.compile(r"/ui/c/c_\w+$"))
    _wait_live(page)
    _send(page, "hello there")
    expect(page.locator("#composer .action-error")).to_contain_text("no model")
    expect(page.locator("#composer textarea")).to_have_value("hello there")
    expect(page.locator("#timeline .bubble.user")).to_have_count(0)


def test_a_free_text_answer_made_of_digits_is_text(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    questions = [{"question": "How many?"}, {"question": "Which?", "options": ["a", "b"]}]
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "ask_question", "args": {"questions": questions}}]},
        [{"when_result_contains": "3", "text": "Three and b."}, {"text": "Something else."}],
    )
    _start(session, model, "auto", "digits")
    _send(page, "ask me")
    form = page.locator("article.tool-ask_question form.questions")
    form.locator("fieldset", has_text="How many?").locator("input").fill("3")
    form.get_by_label("b", exact=True).check()
    form.locator("button[type=submit]").click()
    expect(page.locator("article.tool-ask_question .decision")).to_contain_text("3; b")
    expect(page.locator("#timeline .answer").last).to_have_text("Three and b.")


def _at_bottom(page: object) -> bool:
    return bool(
        page.evaluate(  # type: ignore[attr-defined]
            "() => { const e = document.scrollingElement;"
            " return e.scrollHeight - (e.scrollTop + innerHeight) <= 48; }"
        )
    )


def test_the_chat_follows_new_rows_and_marks_them_when_scrolled_up(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    page.set_viewport_size({"width": 800, "height": 500})
    _sign_in(session, server)
    long = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(40))
    model = script(tmp_path, {"text": long}, {"text": long + " Again."}, {"text": "Last."})
    _start(session, model, "auto", "following")
    _send(page, "first")
    expect(page.locator("#timeline .answer").last).to_contain_text("Paragraph 39")
    expect(page.locator("#runbar .spinner")).to_have_count(0)
    assert _at_bottom(page), "the chat did not follow the answer to the bottom"

    page.evaluate("window.scrollTo(0, 0)")
    _send(page, "second")
    expect(page.locator("#timeline .answer").last).to_contain_text("Again.")
    marker = page.locator("#new-messages")
    expect(marker).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollTop") == 0  # not pulled away
    marker.click()
    expect(marker).to_be_hidden()
    assert _at_bottom(page)


def test_cards_and_end_lines_read_as_english(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    _start(session, script(tmp_path, _APPROVAL, {"text": "Not allowed."}), "balanced", "deny")
    _send(page, "write it")
    footer = page.locator("article.tool-execute footer.approval")
    footer.locator("button.danger").click()
    card = page.locator("article.tool-execute")
    expect(card.locator("footer.decided")).to_contain_text("denied by")
    expect(page.locator("#timeline .answer").last).to_have_text("Not allowed.")
    facts = card.locator("p.facts")
    for index in range(facts.count()):
        assert facts.nth(index).inner_text().strip() not in ("", "·"), facts.nth(index).inner_html()

    page.goto(server.base_url + "/ui/sign-in/spent-or-made-up")
    expect(page.locator("p.error")).to_contain_text("corral serve")
    expect(page.locator("p.error")).not_to_contain_text("`")


def test_settings_use_a_control_per_type_and_say_errors_in_place(
    session: Session, server: LiveServer
) -> None:
    page = session.page
    _sign_in(session, server)
    page.goto(server.base_url + "/ui/settings")
    notify = page.locator("#setting-shell_background_notify")
    expect(notify.locator("label")).to_have_text("Shell background notify")
    expect(notify).to_contain_text("Whether a finished background shell reports")
    box = notify.locator("input[type=checkbox]")
    expect(box).to_be_checked()
    box.uncheck()
    notify.locator("button").click()
    expect(notify.locator(".saved")).to_have_text("Saved.")
    live = server.run(server.platform.live_settings())
    assert live["shell_background_notify"] is False

    slow = page.locator("#setting-perf_slow_tool_ms")
    number = slow.locator("input[type=number]")
    expect(number).to_be_visible()
    button = slow.locator("button")
    assert abs(button.bounding_box()["y"] - number.bounding_box()["y"]) < 20  # one line
    number.evaluate("(input) => { input.type = 'text'; input.value = 'soon'; }")
    button.click()
    expect(slow.locator(".action-error")).to_contain_text("perf_slow_tool_ms")
    expect(page).to_have_url(server.base_url + "/ui/settings")
    expect(page.locator("#settings h1")).to_have_text("Live settings")  # the page is still here


def test_tool_access_buttons_name_their_action_and_disable_asks_first(
    session: Session, server: LiveServer
) -> None:
    page = session.page
    _sign_in(session, server)
    page.goto(server.base_url + "/ui/agents")
    row = page.locator("#tool-execute")
    expect(row.locator(".tool-state")).to_have_text("on")
    expect(row.locator("button")).to_have_text("Turn off")
    asked: list[str] = []

    def dismiss(dialog: object) -> None:
        asked.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    page.on("dialog", dismiss)
    disable = page.locator("form[action='/ui/packages/core'] button")
    expect(disable).to_have_text("Disable")
    disable.click()
    expect(disable).to_have_text("Disable")  # dismissed: nothing was sent
    assert asked and "Disable the package core?" in asked[0]
    snapshot = server.run(server.platform.kernel.config.snapshot())
    assert "core" not in snapshot.state.disabled_packages


_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJ"
    "RU5ErkJggg=="
)


def test_an_image_a_tool_read_is_shown_from_corral_itself(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    (server.data_dir / "drive" / "pic.png").write_bytes(base64.b64decode(_PIXEL_PNG))
    page = session.page
    _sign_in(session, server)
    read = {"tool_calls": [{"name": "fs_read", "args": {"uri": "data://pic.png"}}]}
    _start(session, script(tmp_path, read, {"text": "A pixel."}), "auto", "image")
    _send(page, "show the picture")
    image = page.locator("article.tool-fs_read img.media")
    expect(image).to_have_attribute("src", "/ui/files?uri=data%3A//pic.png")
    expect(page.locator("#timeline .answer").last).to_have_text("A pixel.")
    page.wait_for_function(
        "() => { const img = document.querySelector('article.tool-fs_read img.media');"
        " return img && img.complete && img.naturalWidth === 1; }"
    )
    expect(page.locator("article.tool-fs_read")).not_to_contain_text("resource data://")
    refused = page.request.get(server.base_url + "/ui/files?uri=data://nothing-here.png")
    assert refused.status == 404 and "Traceback" not in refused.text()


def test_the_conversation_list_shows_which_run_and_which_wait(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    gate = "until [ -e list-go ]; do sleep 0.05; done"
    running = {"tool_calls": [{"name": "execute", "args": {"command": gate, "reason": "Wait."}}]}
    busy = _start(session, script(tmp_path, running, {"text": "ok"}), "auto", "busy one")
    _send(page, "go")
    expect(page.locator("article.tool-execute")).to_have_attribute("data-state", "running")
    page.goto(server.base_url + "/ui")
    waiting = _start(session, script(tmp_path, _APPROVAL, {"text": "ok"}), "balanced", "asks")
    _send(page, "go")
    expect(page.locator("article.tool-execute footer.approval")).to_be_visible()
    page.goto(server.base_url + "/ui")
    expect(page.locator(f"#conversation-{busy} .conversation-state")).to_have_text("running")
    expect(page.locator(f"#conversation-{waiting} .conversation-state")).to_have_text(
        "waiting for you"
    )
    (server.data_dir / "drive" / "list-go").write_text("")


def test_a_background_card_shows_live_output_and_kill_says_what_happened(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    page = session.page
    _sign_in(session, server)
    args = {"command": "echo started; sleep 300", "reason": "A long job.", "background": True}
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "execute", "args": args}]},
        {"text": "It runs."},
        {"text": "Noted."},
    )
    _start(session, model, "auto", "background card")
    _send(page, "start it")
    card = page.locator("article.tool-execute")
    expect(card.locator("pre.output.tail")).to_contain_text("started")
    card.locator("button.kill").click()
    expect(card.locator(".kill-result")).to_contain_text("stopped")
    expect(card.locator("button.kill")).to_have_count(0)  # the shell ended: no Kill left
    expect(card.locator("p.facts[sse-swap=ended]")).to_contain_text("stopped · exit code")
    assert card.locator("p.facts", has_text=re.compile(r"^\s*exit code\s*·")).count() == 0
