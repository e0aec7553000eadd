"""A chat message that offered a decision says how it ended when it was made elsewhere
(Telegram's message edited, Slack's updated, buttons gone); only the decision's own person
answers from a chat; a person who asked to be notified gets their new pending decisions of
other conversations in their chat, with buttons that answer them."""

from __future__ import annotations

import httpx

from corral.channels.decisions import outcome_line
from corral.platform import Platform
from corral.runtime.questions import Questions
from tests.channels.conftest import channels, connect, settle, tg_message, tg_press
from tests.channels.test_bound import bound_conversation
from tests.channels.test_slack import SIGNING, message_event, press, send
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeSlack, FakeTelegram
from tests.runtime.conftest import ScriptWriter, call


def _note_script(write_script: ScriptWriter, path: str) -> str:
    return write_script(
        {"tool_calls": [call("write_note", path=path, text="x")]}, {"text": "Written."}
    )


async def test_an_approval_decided_over_http_edits_its_chat_message_and_late_presses_are_told(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    await ch_platform.identity.create_user("bob", "member")
    secret = await webhook_channel(
        ch_platform, telegram, _note_script(write_script, "data://edit.md")
    )
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(20, "me too", user=43), secret)  # bob, in the same chat
    await settle(ch_platform)
    code = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={"user": "bob"})

    await post(http, tg_message(2, "write the note"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    (run,) = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    asking = telegram.sent[-1]
    assert asking["reply_markup"]["inline_keyboard"]
    approve = asking["reply_markup"]["inline_keyboard"][0][0]["callback_data"]

    await post(http, tg_press(21, approve, user=43), secret)  # bob: not his decision
    await settle(ch_platform)
    assert telegram.sent[-1]["text"].startswith("Only owner can answer this")
    assert telegram.method_calls("editMessageText") == []

    approval_id = run.waiting[0].id
    decided = await http.post(f"/approvals/{approval_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text
    await settle(ch_platform, conversation_id)
    (edited,) = telegram.method_calls("editMessageText")
    assert edited["chat_id"] == "4200" and isinstance(edited["message_id"], int)
    assert edited["text"] == asking["text"] + "\n\nApproved by owner through the API\\."
    assert "reply_markup" not in edited  # the buttons are gone

    await post(http, tg_press(22, approve), secret)  # the owner's late press
    await settle(ch_platform)
    late = telegram.sent[-1]["text"]
    assert "was already decided by owner from the API at " in late
    assert len(telegram.method_calls("editMessageText")) == 1
    assert (await ch_platform.runtime.runs.get(run.id)).status == "finished"


async def test_a_person_who_asked_is_notified_of_a_web_decision_and_answers_it_in_the_chat(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await pair(ch_platform, http, telegram, secret, "owner")
    owner = (await ch_platform.caller()).user_id
    before = len(telegram.sent)
    quiet = await ch_platform.chat("write", model=_note_script(write_script, "data://quiet.md"))
    assert quiet.status == "parked"
    await settle(ch_platform)
    assert len(telegram.sent) == before  # not asked for: nothing sent

    service = channels(ch_platform)
    shown = await service.notifications(owner, True)
    assert shown["notify"] is True and [c["chat_id"] for c in shown["paired_chats"]] == ["4200"]
    conversation = await ch_platform.runtime.start_conversation(title="Web work")
    parked = await ch_platform.chat(
        "write",
        conversation_id=conversation.id,
        model=_note_script(write_script, "data://notified.md"),
    )
    assert parked.status == "parked"
    await settle(ch_platform)
    told = telegram.sent[-1]
    assert told["text"].startswith("Waiting for you in “Web work”\\.")
    assert "call 'write\\_note'" in told["text"]
    buttons = [row[0] for row in told["reply_markup"]["inline_keyboard"]]
    assert [b["text"] for b in buttons] == ["Approve", "Deny"]

    await post(http, tg_press(40, buttons[0]["callback_data"]), secret)
    await settle(ch_platform)
    ended = await ch_platform.runtime.wait_run(parked.run_id)
    assert ended.status == "finished"
    await settle(ch_platform, conversation.id)
    (edited,) = telegram.method_calls("editMessageText")
    assert edited["text"] == told["text"] + "\n\nApproved by owner in Telegram\\."
    assert (await ch_platform.approvals.get(quiet.waiting[0].id)).status == "pending"


async def test_a_slack_question_answered_elsewhere_updates_its_message(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    model = write_script(
        {
            "tool_calls": [
                call("ask_question", questions=[{"question": "Ship it?", "options": ["yes", "no"]}])
            ]
        },
        {"text": "Done."},
    )
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING, "model": model},
    )
    await send(http, message_event("Ev1", "hi", ts="100.1"))
    await settle(ch_platform)
    code = slack.posted[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await send(http, message_event("Ev2", "deploy", ts="100.2"))
    pairing = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    conversation_id = pairing["pairings"][0]["conversation_id"]
    await settle(ch_platform, conversation_id)
    asking = slack.posted[-1]
    assert asking["blocks"][1]["elements"]

    questions = ch_platform.services.require(Questions)
    (open_question,) = await questions.list_questions(conversation_id=conversation_id)
    await questions.answer(open_question.id, [1], surface="cli")
    await settle(ch_platform, conversation_id)
    (updated,) = slack.updated
    assert updated["channel"] == "C9" and updated["ts"].startswith("1700000000.")
    assert updated["text"] == asking["text"] + "\n\nAnswered by owner in the terminal."
    assert updated["blocks"] == []


def test_the_edit_names_the_surface_when_the_decision_card_records_one() -> None:
    assert outcome_line("approve", "ana", "web") == "approved by ana in the browser"
    assert outcome_line("deny", "ana", "telegram") == "denied by ana in Telegram"
    assert outcome_line("approve", "ana", "pager") == "approved by ana from pager"
    assert outcome_line("approve", "ana") == "approved by ana"


async def test_a_slack_notification_refuses_another_person_and_is_updated_when_decided_on_http(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    await ch_platform.identity.create_user("bob", "member")
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING, "model": write_script({"text": "x"})},
    )
    await send(http, message_event("Ev1", "hi", ts="100.1"))
    await settle(ch_platform)
    code = slack.posted[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await send(http, message_event("Ev2", "me too", ts="100.2", user="U2"))
    await settle(ch_platform)
    code = slack.posted[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={"user": "bob"})
    owner = (await ch_platform.caller()).user_id
    await channels(ch_platform).notifications(owner, True)

    conversation = await ch_platform.runtime.start_conversation(title="Web work")
    parked = await ch_platform.chat(
        "write",
        conversation_id=conversation.id,
        model=_note_script(write_script, "data://slack-notified.md"),
    )
    assert parked.status == "parked"
    await settle(ch_platform)
    told = slack.posted[-1]
    assert told["channel"] == "C9"
    assert told["text"].startswith("Waiting for you in “Web work”.")
    buttons = told["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Approve", "Deny"]

    await press(http, buttons[0]["value"], user="U2")  # bob: not his decision
    await settle(ch_platform)
    assert slack.posted[-1]["text"].startswith("Only owner can answer this")
    approval_id = parked.waiting[0].id
    assert (await ch_platform.approvals.get(approval_id)).status == "pending"
    assert slack.updated == []

    decided = await http.post(f"/approvals/{approval_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text
    assert (await ch_platform.runtime.wait_run(parked.run_id)).status == "finished"
    await settle(ch_platform, conversation.id)
    (updated,) = slack.updated
    assert updated["channel"] == "C9" and updated["ts"].startswith("1700000000.")
    assert updated["text"] == told["text"] + "\n\nApproved by owner through the API."
    assert updated["blocks"] == []


async def test_a_decision_recorded_by_another_process_is_edited_by_the_sweep_from_its_record(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(
        ch_platform, telegram, _note_script(write_script, "data://swept.md")
    )
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(2, "write the note"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    (run,) = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    asking = telegram.sent[-1]
    owner = (await ch_platform.caller()).user_id

    # Recorded as `corral approvals decide` in another process would: no row here to follow.
    await ch_platform.approvals.claim(
        run.waiting[0].id, "deny", by=owner, by_name="owner", note=None, surface="cli"
    )
    await settle(ch_platform)
    assert telegram.method_calls("editMessageText") == []
    await channels(ch_platform).decisions.settle()  # the relay's periodic sweep
    (edited,) = telegram.method_calls("editMessageText")
    assert edited["text"] == asking["text"] + "\n\nDenied by owner in the terminal\\."
    await channels(ch_platform).decisions.settle()
    assert len(telegram.method_calls("editMessageText")) == 1  # edited once
