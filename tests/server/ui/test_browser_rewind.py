"""Rewind and fork from a tool call's card in real Chromium: the preview shows the diff of a
text file and the file the call made, rewinding files and conversation puts the file back
and shows the later rows as rewound, forking opens the new conversation, and bad requests
get clear messages, never a 500."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.sandbox_owner import give_to_sandbox
from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect


def _changed_project(server: LiveServer, tmp_path: Path, name: str) -> tuple[str, Path]:
    """A conversation whose one turn edits ``notes.txt`` and makes ``made.txt`` in a project
    of the drive (checkpoints on); its id and the project folder."""
    platform = server.platform
    server.run(platform.admin.set_live("checkpoints", True))
    drive = server.data_dir / "drive"
    project = drive / name
    project.mkdir(parents=True)
    (project / "notes.txt").write_text("alpha\nbeta\n")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    command = "sed -i s/beta/gamma/ notes.txt && echo new > made.txt"
    call = {"name": "execute", "args": {"command": command, "cwd": str(project)}}
    model = script(tmp_path, {"tool_calls": [call]}, {"text": "Changed the notes."})
    rt = platform.runtime
    conversation = server.run(rt.start_conversation(model=model, profile="auto", title=name))
    turn = server.run(rt.chat("change the notes", conversation_id=conversation.id))
    assert turn.status == "finished", turn
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    return conversation.id, project


def _open(session: Session, server: LiveServer, conversation: str) -> Any:
    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))
    page.goto(f"{server.base_url}/ui/c/{conversation}")
    card = page.locator("article.tool-execute")
    expect(card).to_have_attribute("data-state", "done")
    return card


def test_preview_then_rewind_files_and_conversation(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    conversation, project = _changed_project(server, tmp_path, "rewound")
    page = session.page
    card = _open(session, server, conversation)
    card.get_by_role("link", name="Rewind to here").click()
    expect(page).to_have_url(re.compile(rf"/ui/c/{conversation}/rewind/"))
    notes = page.locator('.rewind-file[data-path="rewound/notes.txt"]')
    expect(notes.locator("pre.diff .del")).to_have_text("-gamma")
    expect(notes.locator("pre.diff .add")).to_have_text("+beta")
    made = page.locator('.rewind-file[data-path="rewound/made.txt"]')
    expect(made).to_contain_text("removed")
    expect(page.locator(".hidden-rows")).to_contain_text("hidden from the model")
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"  # a preview changes nothing

    page.get_by_role("button", name="Rewind files and conversation").click()
    expect(page).to_have_url(re.compile(rf"/ui/c/{conversation}$"))
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert not (project / "made.txt").exists()
    rewound = page.locator("[data-rewound]")
    expect(rewound.locator("article.tool-execute")).to_have_count(1)
    expect(rewound.locator(".answer")).to_have_text("Changed the notes.")
    expect(page.locator(".rewind-marker")).to_contain_text("row(s) hidden from the model")
    expect(page.locator(".bubble.user")).not_to_have_class(re.compile("rewound"))
    assert page.locator("[data-rewound] .bubble.user").count() == 0


def test_fork_from_a_card_opens_the_new_conversation(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    conversation, project = _changed_project(server, tmp_path, "forking")
    page = session.page
    card = _open(session, server, conversation)
    card.get_by_role("button", name="Fork from here").click()
    expect(page).not_to_have_url(re.compile(rf"/ui/c/{conversation}$"))
    expect(page).to_have_url(re.compile(r"/ui/c/c_\w+$"))
    expect(page.locator(".fork-marker")).to_contain_text(conversation)
    expect(page.locator(".bubble.user")).to_have_text("change the notes")
    expect(page.locator("article.tool-execute")).to_have_count(0)  # nothing was run again

    # From the preview, with the files as they were then into a new folder.
    page.goto(f"{server.base_url}/ui/c/{conversation}")
    page.locator("article.tool-execute").get_by_role("link", name="Rewind to here").click()
    page.fill(".fork-form input[name=files_into]", "data://forking-then")
    page.locator(".fork-form").get_by_role("button", name="Fork from here").click()
    expect(page.locator(".fork-marker")).to_contain_text("data://forking-then")
    then = server.data_dir / "drive" / "forking-then" / "forking"
    assert (then / "notes.txt").read_text() == "alpha\nbeta\n"
    assert not (then / "made.txt").exists()
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"  # the original stays

    # A folder that exists already: a clear message beside the form, nothing made.
    page.goto(f"{server.base_url}/ui/c/{conversation}")
    page.locator("article.tool-execute").get_by_role("link", name="Rewind to here").click()
    page.fill(".fork-form input[name=files_into]", "data://forking-then")
    page.locator(".fork-form").get_by_role("button", name="Fork from here").click()
    expect(page.locator(".action-error")).to_contain_text("exists already")


def test_bad_rewind_requests_get_clear_messages(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    conversation, _ = _changed_project(server, tmp_path, "bad")
    page = session.page
    _open(session, server, conversation)
    csrf = page.evaluate("JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRF-Token']")
    shown = page.goto(f"{server.base_url}/ui/c/{conversation}/rewind/no-such-call")
    assert shown is not None and shown.status == 400
    expect(page.locator("main")).to_contain_text("tool call 'no-such-call'")
    shown = page.goto(f"{server.base_url}/ui/c/c_nothere/rewind/x")
    assert shown is not None and shown.status == 404
    for path, form in [
        (f"/ui/c/{conversation}/rewind/no-such-call", {"mode": "both"}),
        (f"/ui/c/{conversation}/rewind/no-such-call", {"mode": "sideways"}),
        (f"/ui/c/{conversation}/fork/no-such-call", {}),
    ]:
        answer = page.request.post(
            server.base_url + path, form=form, headers={"X-CSRF-Token": csrf, "HX-Request": "true"}
        )
        assert 400 <= answer.status < 500, (path, form, answer.status, answer.text())
        assert "Traceback" not in answer.text()


def test_conflicts_are_listed_and_refuse_until_overwritten(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    conversation, project = _changed_project(server, tmp_path, "conflicted")
    (project / "notes.txt").write_text("alpha\ngamma\nby a person\n")
    page = session.page
    card = _open(session, server, conversation)
    card.get_by_role("link", name="Rewind to here").click()
    conflicts = page.locator(".conflicts-box .conflicts")
    expect(conflicts).to_contain_text("conflicted/notes.txt")
    expect(conflicts).to_contain_text("changed since")

    page.get_by_role("button", name="Rewind files only").click()
    refused = page.locator(".action-error .rewind-refused")
    expect(refused).to_contain_text("Not rewound")
    expect(refused).to_contain_text("conflicted/notes.txt")
    assert (project / "notes.txt").read_text() == "alpha\ngamma\nby a person\n"

    page.get_by_label("Overwrite them").check()
    page.get_by_role("button", name="Rewind files only").click()
    expect(page).to_have_url(re.compile(rf"/ui/c/{conversation}$"))
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert page.locator("[data-rewound]").count() == 0  # files only: the history stays
