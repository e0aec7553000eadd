"""The Delegates tab in real Chromium: a background subagent's transcript opens read-only,
follows the run live, takes its approvals on their cards, and shows the answer when the run
ends; another person gets a 404 for all of it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from corral.runtime.delegation import Delegation
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME
from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect


_WIDE = """() => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > 390 || e.scrollWidth > e.clientWidth)
  .map((e) => `${e.tagName}.${e.className}: ${Math.round(e.getBoundingClientRect().right)}px`)"""
"""The elements that reach past a phone's width, for the failure message."""


def _execute(command: str, reason: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute", "args": {"command": command, "reason": reason}}]}


def _approve(card: Any, note: str = "") -> None:
    footer = card.locator("footer.approval")
    expect(footer).to_be_visible()
    if note:
        footer.locator("input[name=note]").fill(note)
    footer.locator("button.approve").click()
    expect(card.locator("footer.decided")).to_contain_text("approved by")


def test_a_background_subagent_is_followed_and_approved_in_its_transcript(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    child = script(
        tmp_path,
        _execute("echo one > delegated-one.txt", "Write the first file."),
        _execute("echo two > delegated-two.txt", "Write the second file."),
        {"text": "Both **files** are written."},
    )
    task = {"task": "Write the two files.", "background": True, "model": child}
    parent = script(
        tmp_path,
        {"tool_calls": [{"name": "delegate", "args": task}]},
        {"text": "The subagent works in the background."},
        {"text": "The subagent reported back."},
    )
    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))
    turn = server.run(
        server.platform.runtime.start_chat("delegate", model=parent, profile="balanced")
    )
    cid = turn.conversation_id

    # The Delegates tab, open in a second page before there is any run, follows them live.
    tab = session.context.new_page()
    tab.goto(f"{server.base_url}/ui/c/{cid}/delegates")
    expect(tab.locator("body[data-live=open]")).to_have_count(1)
    expect(tab.locator("#delegate-list")).to_contain_text("No delegate runs")

    # Under balanced the delegate call itself asks first; approved in the chat, the child starts.
    page.goto(f"{server.base_url}/ui/c/{cid}")
    _approve(page.locator("article.tool-delegate"))
    expect(page.locator("#timeline .answer").last).to_have_text(
        "The subagent works in the background."
    )

    listed = tab.locator("article.delegate")
    expect(listed).to_contain_text("Write the two files.")
    expect(listed.locator(".state")).to_have_text("parked")
    expect(listed.locator("p.approval")).to_contain_text("waiting for your approval of execute")
    tab.screenshot(path=str(tmp_path / "delegates-tab.png"), full_page=True)
    tab.close()

    page.click("nav.tabs >> text=Delegates")
    listed = page.locator("article.delegate")
    expect(listed).to_have_count(1)
    listed.locator("a.open-run").click()
    expect(page).to_have_url(re.compile(r"/ui/delegates/r_\w+$"))
    run_id = page.url.rsplit("/", 1)[1]
    expect(page.locator("body[data-live=open]")).to_have_count(1)

    head = page.locator("#delegate-head")
    expect(head).to_have_attribute("data-status", "parked")
    first = page.locator("article.tool-execute").first
    expect(first.locator(".reason")).to_have_text("Write the first file.")
    page.reload()  # the parked approval survives a reload
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    page.screenshot(path=str(tmp_path / "delegate-parked.png"), full_page=True)
    _approve(page.locator("article.tool-execute").first, note="first is fine")
    expect(page.locator("article.tool-execute").first).to_have_attribute("data-state", "done")
    expect(page.locator("article.tool-execute footer.decided").first).to_contain_text(
        "first is fine"
    )

    # The child's next call arrives on the open page without a reload, and waits there.
    second = page.locator("article.tool-execute").nth(1)
    expect(second.locator(".reason")).to_have_text("Write the second file.")
    expect(head).to_have_attribute("data-status", "parked")
    _approve(second)
    expect(page.locator("#timeline .answer strong")).to_have_text("files")
    expect(head).to_have_attribute("data-status", "finished")
    expect(head.locator(".answer")).to_contain_text("Both files are written.")
    drive = server.data_dir / "drive"
    assert (drive / "delegated-one.txt").read_text() == "one\n"
    assert (drive / "delegated-two.txt").read_text() == "two\n"
    page.screenshot(path=str(tmp_path / "delegate-finished.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "delegate-phone.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the transcript scrolls sideways on a phone: {page.evaluate(_WIDE)}"

    state: UiState = server.app.state.ui
    other = server.run(server.platform.identity.create_user("noa", "member"))
    cookies = {COOKIE_NAME: server.run(state.sessions.begin(other))}
    with httpx.Client(base_url=server.base_url, cookies=cookies, timeout=30) as client:
        for path in (
            f"/ui/delegates/{run_id}",
            f"/ui/delegates/{run_id}/stream",
            f"/ui/c/{cid}/delegates",
        ):
            assert client.get(path).status_code == 404, path


def _delegate_turn(server: LiveServer, tmp_path: Path, child: str, **args: Any) -> tuple[str, str]:
    """A parent turn (auto) that delegates in the foreground; (parent conversation, run)."""
    call = {"name": "delegate", "args": {"task": "Look around.", "model": child, **args}}
    parent = script(tmp_path, {"tool_calls": [call]}, {"text": "Parent done."})
    turn = server.run(server.platform.runtime.chat("go", model=parent, profile="auto"))
    result = next(r for r in turn.rows if r.kind == "tool_result")
    return turn.conversation_id, str(result.data["result"]["data"]["run_id"])


def test_each_run_of_a_child_opens_on_its_own_rows_and_a_partial_one_says_so(
    server: LiveServer, tmp_path: Path
) -> None:
    state: UiState = server.app.state.ui
    owner = server.run(server.platform.caller(None)).user_id
    cookies = {COOKIE_NAME: server.run(state.sessions.begin(owner))}
    child = script(tmp_path, {"text": "First <b>answer</b>."}, {"text": "Second answer."})
    cid, first = _delegate_turn(server, tmp_path, child)
    delegation = server.platform.services.require(Delegation)
    second = server.run(delegation.continue_run(first, "Once more.", user=None)).id
    server.run(server.platform.runtime.wait_run(second))

    budget = script(
        tmp_path,
        {"tool_calls": [{"name": "fs_list", "args": {"uri": "data://"}}]},
        {"text": "Half done; the rest needs a second pass."},
    )
    _, partial = _delegate_turn(server, tmp_path, budget, max_steps=2)
    with httpx.Client(base_url=server.base_url, cookies=cookies, timeout=30) as client:
        page = client.get(f"/ui/delegates/{first}").text
        assert "First &lt;b&gt;answer&lt;/b&gt;." in page and "Second answer." not in page
        assert 'data-status="finished"' in page
        page = client.get(f"/ui/delegates/{second}").text
        assert "Once more." in page and "Second answer." in page
        assert "Look around." not in page.split('id="timeline"')[1]
        page = client.get(f"/ui/delegates/{partial}").text
        assert 'data-status="partial"' in page and "partial: cut at its limit" in page
        assert "tool-fs_list" in page and "Half done; the rest needs a second pass." in page
        listed = client.get(f"/ui/c/{cid}/delegates").text
        assert f'href="/ui/delegates/{first}"' in listed
        assert f'href="/ui/delegates/{second}"' in listed
        assert client.get(f"/ui/delegates/{partial}x").status_code == 404


def test_a_foreground_childs_approval_is_decided_on_the_parents_delegate_card(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    child = script(
        tmp_path,
        _execute("echo inner > from-parent-card.txt", "Write the file from the parent's card."),
        {"text": "The child wrote it."},
    )
    task = {"task": "Write one file.", "model": child}
    parent = script(
        tmp_path,
        {"tool_calls": [{"name": "delegate", "args": task}]},
        {"text": "The parent goes on after its child."},
    )
    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))
    turn = server.run(
        server.platform.runtime.start_chat("delegate", model=parent, profile="balanced")
    )
    page.goto(f"{server.base_url}/ui/c/{turn.conversation_id}")
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    delegate = page.locator("article.tool-delegate")
    # Balanced asks for the delegate call itself first.
    delegate.locator("footer.approval button.approve").click()

    # The child parks: the parent's delegate card becomes the child's card, live.
    inner = delegate.locator("article.tool-execute")
    expect(inner.locator(".reason")).to_have_text("Write the file from the parent's card.")
    expect(delegate.locator("p.delegate-waits")).to_contain_text("waiting for you")
    expect(inner.locator("footer.approval select[name=remember]")).to_have_count(1)
    # The header's list links the child's approval to the parent's conversation.
    waiting = page.locator(f"#waiting-for-you li:has(a[href='/ui/c/{turn.conversation_id}'])")
    expect(waiting).to_contain_text("approval of a subagent · execute: echo inner")
    page.reload()  # and stays so after a reload
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    expect(inner.locator("footer.approval")).to_be_visible()
    page.screenshot(path=str(tmp_path / "delegate-card-parked.png"), full_page=True)

    inner.locator("footer.approval button.approve").click()
    expect(page.locator("#timeline .answer").last).to_have_text(
        "The parent goes on after its child."
    )
    expect(delegate).to_have_attribute("data-state", "done")
    expect(delegate.locator("pre.output")).to_contain_text("The child wrote it.")
    expect(delegate.locator("footer.approval")).to_have_count(0)
    assert (server.data_dir / "drive" / "from-parent-card.txt").read_text() == "inner\n"
