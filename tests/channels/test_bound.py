"""Bound conversations: approvals and questions answered from the chat, reports and workflow
answers delivered to it, and only the run's own user may answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from corral.platform import Platform
from corral.service_protocols import ReportSink
from corral.shell.service import ShellService
from tests.channels.conftest import settle, tg_message, tg_press
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.conftest import ScriptWriter, call
from tests.shell.conftest import needs_bwrap


async def bound_conversation(http: httpx.AsyncClient) -> str:
    bound = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    conversation_id: str = bound["pairings"][0]["conversation_id"]
    return conversation_id


async def test_an_approval_under_balanced_is_answered_by_the_runs_own_user_pressing_a_button(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    await ch_platform.identity.create_user("bob", "member")
    model = write_script(
        {"text": "Writing.", "tool_calls": [call("write_note", path="data://tg.md", text="x")]},
        {"text": "Written."},
    )
    secret = await webhook_channel(ch_platform, telegram, model)
    await pair(ch_platform, http, telegram, secret, "owner")  # the drive lets the owner write
    # bob writes into the same (group) chat and is paired to his own user.
    await post(http, tg_message(20, "me too", user=43), secret)
    await settle(ch_platform)
    code = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={"user": "bob"})

    await post(http, tg_message(2, "write the note"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    (run,) = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    assert (run.status, run.profile) == ("parked", "balanced")
    asking = telegram.sent[-1]
    assert "call 'write\\_note'" in asking["text"]
    buttons = [row[0] for row in asking["reply_markup"]["inline_keyboard"]]
    assert [b["text"] for b in buttons] == ["Approve", "Deny"]
    approve = buttons[0]["callback_data"]

    await post(http, tg_press(21, approve, user=43), secret)  # bob: not his run
    await settle(ch_platform)
    assert "Only owner can answer this: the decision is theirs" in telegram.sent[-1]["text"]
    assert (await ch_platform.runtime.runs.get(run.id)).status == "parked"

    await post(http, tg_press(22, approve), secret)
    await settle(ch_platform, conversation_id)
    assert (await ch_platform.runtime.runs.get(run.id)).status == "finished"
    texts = [m["text"] for m in telegram.sent]
    assert texts[-1] == "Written\\." and texts[-2].startswith("\\[write\\_note: ok\\]")
    assert {c["callback_query_id"] for c in telegram.method_calls("answerCallbackQuery")} == {
        "cq21",
        "cq22",
    }


async def test_a_question_is_answered_by_a_button_and_a_report_reaches_the_chat(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    model = write_script(
        {
            "tool_calls": [
                call("ask_question", questions=[{"question": "Which?", "options": ["red", "blue"]}])
            ]
        },
        {"when_result_contains": "blue", "text": "Blue it is."},
        {"when_message_contains": "exit code 0", "text": "The build passed."},
    )
    secret = await webhook_channel(ch_platform, telegram, model)
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(2, "pick a colour"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    asking = telegram.sent[-1]
    assert asking["text"].startswith("The agent asks:")
    blue = asking["reply_markup"]["inline_keyboard"][1][0]
    assert blue["text"] == "blue"
    await post(http, tg_press(3, blue["callback_data"]), secret)
    await settle(ch_platform, conversation_id)
    assert telegram.sent[-1]["text"] == "Blue it is\\."

    owner = await ch_platform.caller()
    reports: ReportSink | None = ch_platform.services.reports
    assert reports is not None
    await reports.queue_report(
        conversation_id=conversation_id,
        user_id=owner.user_id,
        source="shell",
        source_id="sh_1",
        title="npm test",
        text="exit code 0",
        data={"exit_code": 0},
    )
    await settle(ch_platform, conversation_id)  # the report turn ran on the server
    assert [m["text"] for m in telegram.sent[-2:]] == [
        "\\[report: npm test\\]",
        "The build passed\\.",
    ]


async def test_a_workflow_bound_to_the_channel_delivers_its_answer_and_its_failures(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await pair(ch_platform, http, telegram, secret, "owner")
    owner = await ch_platform.caller()
    workflows = ch_platform.workflows
    done = await workflows.set(
        {
            "title": "Digest",
            "instruction": "Summarise.",
            "model": write_script({"text": "All quiet today."}),
            "delivery": ["tg"],
        },
        owner,
    )
    run = await workflows.run(done.id, owner)
    await ch_platform.runtime.wait_run(run.id)
    await settle(ch_platform)
    assert telegram.sent[-1]["text"] == "Workflow “Digest” finished:\nAll quiet today\\."
    broken = await workflows.set(
        {
            "title": "Broken",
            "instruction": "x",
            "model": write_script({"text": "y"}),
            "delivery": ["tg"],
        },
        owner,
    )
    script_path = Path(broken.setup["model"].removeprefix("script:"))
    # The model breaks between setting and running.
    await asyncio.to_thread(script_path.write_text, "{not json")
    failed = await workflows.run(broken.id, owner)
    ended = await ch_platform.runtime.wait_run(failed.id)
    await settle(ch_platform)
    assert ended.status == "failed"
    assert telegram.sent[-1]["text"].startswith("Workflow “Broken” failed: ")


async def test_forged_or_foreign_presses_decide_nothing(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await pair(ch_platform, http, telegram, secret, "owner")
    # The same user has another conversation, in the web app, parked on an approval.
    parked = await ch_platform.chat(
        "write",
        model=write_script(
            {"tool_calls": [call("write_note", path="data://web.md", text="x")]}, {"text": "ok"}
        ),
    )
    assert parked.status == "parked"
    approval = parked.waiting[0].id
    forged = f"a:{approval}:approve"
    await post(http, tg_press(30, forged), secret)  # the paired sender, another conversation
    await post(http, tg_press(31, forged, user=99, chat=99), secret)  # an unpaired sender
    await settle(ch_platform)
    texts = [m["text"] for m in telegram.sent[-2:]]
    assert "That decision was not offered in this chat" in texts[0]
    assert "pairing code" in texts[1]
    assert (await ch_platform.approvals.get(approval)).status == "pending"
    await post(http, tg_press(32, "a:ap_nonexistent:approve"), secret)
    await post(http, tg_press(33, "garbage"), secret)
    await settle(ch_platform)
    assert "no longer exists" in telegram.sent[-2]["text"]
    assert "not one I know" in telegram.sent[-1]["text"]


@needs_bwrap
async def test_a_real_background_shell_reports_to_the_chat_through_a_server_turn(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    model = write_script(
        {"tool_calls": [call("execute", command="echo built-ok", background=True, reason="build")]},
        {"text": "Started; it reports back."},
        {"when_message_contains": "built-ok", "text": "The build printed built-ok."},
    )
    secret = await webhook_channel(ch_platform, telegram, model)
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(2, "build it"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    # Balanced asks before a command runs: the run's user approves it from the chat.
    press = telegram.sent[-1]["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    await post(http, tg_press(3, press), secret)
    await settle(ch_platform, conversation_id)
    rows = await ch_platform.rows(conversation_id)
    (started,) = [r for r in rows if r.kind == "tool_result" and r.data["tool"] == "execute"]
    shell_id = started.data["result"]["data"]["shell_id"]
    await ch_platform.services.require(ShellService).background.wait_ended(shell_id, 30)
    await settle(ch_platform, conversation_id)  # the report's turn ran on the server
    texts = [m["text"] for m in telegram.sent]
    assert texts[-1] == "The build printed built\\-ok\\."
    assert any(t.startswith("\\[report: ") for t in texts)
