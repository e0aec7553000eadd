"""/summarize: a model-written summary stands in for the conversation, reversibly."""

from __future__ import annotations

import pytest

from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.compaction import Compactions
from corral.runtime.compaction.summarize import INSTRUCTIONS, REQUEST
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call
from tests.runtime.recording import Player

SUMMARY = "The user said one and two; echo printed a long build log."
LOG = "compiled module ok; " * 300


async def test_summarize_replaces_the_history_in_later_prompts_until_shown_in_full(
    rt_platform: Platform, rt: Runtime
) -> None:
    chatting = Player(
        rt,
        "play:chat",
        {"tool_calls": [call("echo", text=LOG)]},
        {"text": "first answer"},
        {"text": "second answer"},
    )
    summarizer = Player(rt, "play:summarizer", final=SUMMARY)
    after = Player(rt, "play:after", final="after the summary")
    full = Player(rt, "play:full", final="with everything")
    first = await rt_platform.chat("one", model=chatting.name)
    cid = first.conversation_id
    await rt_platform.chat("two", conversation_id=cid)
    rows_before = [r.to_json() for r in await rt.conversations.rows(cid)]

    service = rt_platform.services.require(Compactions)
    made = await service.summarize(cid, model=summarizer.name)
    assert made["source"] == "summarize" and made["summary"] == SUMMARY
    assert (made["first_seq"], made["last_seq"]) == (1, rows_before[-1]["seq"])
    assert made["tokens_before"] > 1_000 > made["tokens_after"] > 0
    assert made["tokenizer"] == "cl100k_base" and made["applied"] is True
    [asked] = summarizer.seen
    assert asked.system == INSTRUCTIONS and asked.tools == []
    assert asked.texts()[-1] == REQUEST and LOG in asked.texts()
    usage = await rt_platform.logs.records(kind="usage")
    assert [r.data["source"] for r in usage] == ["summarize"]

    third = await rt_platform.chat("three", conversation_id=cid, model=after.name)
    assert third.text == "after the summary"
    [seen] = after.seen
    assert seen.call_ids("echo") == []
    opening = seen.texts()
    assert opening[0].startswith(
        f"[Summary of the conversation so far (rows 1 to {made['last_seq']})"
    )
    assert opening[0].endswith(SUMMARY) and opening[1:] == ["three"]

    await service.set_applied(cid, made["id"], False)
    fourth = await rt_platform.chat("four", conversation_id=cid, model=full.name)
    assert fourth.text == "with everything"
    texts = full.seen[0].texts()
    assert texts[0] == "one" and LOG in texts and SUMMARY not in "".join(texts)
    stored = [r.to_json() for r in await rt.conversations.rows(cid)]
    assert stored[: len(rows_before)] == rows_before


async def test_summarize_refuses_a_busy_or_empty_conversation(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    service = rt_platform.services.require(Compactions)
    empty = await rt.start_conversation(model="script:unused")
    with pytest.raises(UsageError, match="nothing to summarize"):
        await service.summarize(empty.id)
    ask = call("ask_question", questions=[{"question": "Go on?"}])
    parked = await rt_platform.chat("hi", model=write_script({"tool_calls": [ask]}))
    assert parked.status == "parked"
    with pytest.raises(UsageError, match="turn in flight or waiting"):
        await service.summarize(parked.conversation_id)
    assert await service.list_compactions(parked.conversation_id) == []
