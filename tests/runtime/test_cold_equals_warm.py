"""A cold build (the conversation read whole from the SQLite file) makes exactly the messages
the warm builds made while following every row as it was stored: every field of every part,
timestamps aside, across tool calls and their results (text, media, errors, denials, calls
left without a result), attachments, reports, inbox and channel messages, cards, and
compactions (trims, a /summarize range, "Show full" and back)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from corral.platform import Platform
from corral.runtime.compaction.cards import TOGGLE, Compaction, Target
from corral.runtime.prompt.history import NO_RESULT
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from tests.runtime.conftest import ScriptWriter
from tests.runtime.test_prompt import build

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n not really an image").decode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def result(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"content": list(blocks), "status": "ok", **extra}


def turn(number: int, *tools: str, said: str = "") -> list[NewRow]:
    """A model turn and its calls ``t<number>_<i>``."""
    rows = [NewRow(kind="model_turn", data={"text": said or f"turn {number}"})]
    rows += [
        NewRow(
            kind="tool_call",
            call_id=f"t{number}_{i}",
            data={"tool": tool, "args": {"text": f"{tool} {number}.{i}"}},
        )
        for i, tool in enumerate(tools)
    ]
    return rows


def returned(call_id: str, payload: dict[str, Any], tool: str = "echo") -> NewRow:
    return NewRow(kind="tool_result", call_id=call_id, data={"tool": tool, "result": payload})


BATCHES: list[list[NewRow]] = [
    [
        NewRow(kind="user_message", user_id="u_1", data={"text": "plain question"}),
        *turn(1, "echo", "echo", said="two calls"),
        returned("t1_0", result(text("x" * 300))),
        returned("t1_1", result(text("first"), text("second"))),
    ],
    [
        NewRow(
            kind="user_message",
            data={
                "text": "look at ⟦fs:read:data://a.txt⟧ and ⟦fs:read:data://gone.png⟧",
                "attachments": [
                    text("[attachment ⟦fs:read:data://a.txt⟧]"),
                    text("data://a.txt (1 line)\n     1\thello"),
                    {"type": "image", "media_type": "image/png", "data": PNG},
                    {"type": "resource", "uri": "data://gone.png", "media_type": "image/png"},
                ],
            },
        ),
        *turn(2, "echo", "echo", "echo"),
        returned("t2_0", result(text("boom"), is_error=True)),
        returned("t2_1", {"content": [], "status": "denied"}),
        returned("t2_2", result({"type": "image", "media_type": "image/png", "data": PNG})),
        returned("t9_9", result(text("a result whose call is not in the turn before it"))),
    ],
    [
        NewRow(kind="card", data={"card": "run_ended", "status": "finished"}),
        NewRow(
            kind="background_report",
            data={"source": "shell", "source_id": "sh_1", "title": "build", "text": "done"},
        ),
        NewRow(
            kind="message",
            data={"text": "hi", "sender": {"agent": "helper", "conversation_id": "c_x"}, "hop": 1},
        ),
        NewRow(
            kind="user_message",
            data={
                "text": "from a chat",
                "channel": {"provider": "telegram", "connection": "tg", "sender_name": "Ann"},
            },
        ),
        *turn(3, "echo", "echo"),
        returned("t3_1", result(text("only the second call returned"))),
        returned("t3_1", result(text("and twice"))),
        NewRow(kind="user_message", data={"text": ""}),
        *turn(4, said=""),
        NewRow(kind="user_message", data={"text": "last"}),
        *turn(5, "echo"),  # its call never returns: a synthetic "no result" closes it
    ],
]


def comparable(messages: Sequence[ModelMessage]) -> Any:
    """Every field of every message and part, timestamps (when it was built) left out."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "timestamp"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"))


def seq_of(rows: Sequence[TimelineRow], call_id: str) -> int:
    return next(r.seq for r in rows if r.kind == "tool_result" and r.call_id == call_id)


async def test_a_cold_build_makes_the_same_messages_as_the_warm_builds(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    first = await rt_platform.chat("hello", model=write_script({"text": "hi"}))
    cid, run_id = first.conversation_id, first.run_id
    stored: list[TimelineRow] = list(await rt.conversations.rows(cid))

    async def check() -> None:
        warm = await build(rt, run_id)
        rt.prompt.forget(cid)
        cold = await build(rt, run_id)
        assert comparable(cold.messages) == comparable(warm.messages)
        assert cold.system == warm.system
        again = await build(rt, run_id)  # warm again, from the cold build's cache
        assert comparable(again.messages) == comparable(cold.messages)

    await build(rt, run_id)
    for batch in BATCHES:
        stored += await rt.append(cid, batch)
        await check()
    everything = str(comparable((await build(rt, run_id)).messages))
    for seen in (
        NO_RESULT,
        "(no output)",
        "'outcome': 'denied'",
        "'outcome': 'failed'",
        "[image data://gone.png is no longer available",
        "this model does not take image input",
        '<untrusted_content kind="agent_message"',
        '<untrusted_content kind="channel_message"',
        "<background_report",
    ):
        assert seen in everything
    assert "a result whose call is not in the turn before it" not in everything

    trim = Compaction(
        id="cmp_trim",
        source="compact_history",
        action="truncate",
        keep_chars=40,
        reason="long output",
        targets=(
            Target(seq=seq_of(stored, "t1_0"), kind="tool_result", tool_use_id="t1_0"),
            Target(seq=seq_of(stored, "t2_2"), kind="tool_result", tool_use_id="t2_2"),
        ),
    )
    removal = Compaction(
        id="cmp_remove",
        source="compact_history",
        action="remove",
        targets=(Target(seq=stored[0].seq, kind="user_message"),),
    )
    summary = Compaction(
        id="cmp_sum",
        source="summarize",
        action="summarize",
        summary="Two turns of echo calls.",
        first_seq=stored[0].seq,
        last_seq=seq_of(stored, "t1_1"),
    )
    for card in (trim.card(), removal.card()):
        await rt.append(cid, [NewRow(kind="card", data=card)])
        await check()
    shown = str(comparable((await build(rt, run_id)).messages))
    assert "characters trimmed by compact_history cmp_trim" in shown
    assert "removed from your context by compact_history cmp_remove" in shown

    await rt.append(cid, [NewRow(kind="card", data=summary.card())])
    await check()
    assert "Summary of the conversation so far" in str(
        comparable((await build(rt, run_id)).messages)
    )
    for applied in (False, True):
        toggle = {"card": TOGGLE, "id": "cmp_sum", "applied": applied, "by": "u_1"}
        await rt.append(cid, [NewRow(kind="card", data=toggle), *turn(6 + applied, "echo")])
        await check()
