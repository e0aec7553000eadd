"""A cold prompt build (a process that never saw the conversation reads it whole through the
bulk read) equals the warm build that followed every row as it was stored: across a
compaction, its "Show full" toggle, reports, inbox messages, cards and unusual text."""

from __future__ import annotations

from corral.platform import Platform
from corral.runtime.compaction import Compactions
from corral.runtime.prompt import Prompt
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow
from tests.runtime.conftest import call
from tests.runtime.recording import Player
from tests.runtime.test_prompt import build, shape

LINE = "12:00:01 compiled module ok\n"
ODD = 'quotes " and \\ backslashes, ünïcødé, emoji 🐍, a NUL-free "[" and "]", \u2028 too'


async def warm_then_cold(rt: Runtime, run_id: str, conversation_id: str) -> tuple[Prompt, Prompt]:
    warm = await build(rt, run_id)
    rt.prompt.forget(conversation_id)
    cold = await build(rt, run_id)
    return warm, cold


def texts(prompt: Prompt) -> str:
    """Every text the model reads in the history, as it reads it."""
    return "\n".join(
        str(part.content) for m in prompt.messages for part in m.parts if hasattr(part, "content")
    )


def assert_same(warm: Prompt, cold: Prompt) -> None:
    assert shape(cold.messages) == shape(warm.messages)
    assert cold.system == warm.system


async def test_a_cold_build_equals_the_warm_one_across_compaction_and_show_full(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Player(
        rt,
        "play:cold",
        {"text": ODD, "tool_calls": [call("echo", text=LINE, repeat=400)]},
        {
            "tool_calls": [
                call(
                    "compact_history",
                    action="truncate",
                    targets=[{"tool_use_id": "call_0_0"}],
                    keep_chars=200,
                    reason="raw build log",
                )
            ]
        },
        {"text": "Trimmed."},
    )
    turn = await rt_platform.chat(f"build it {ODD}", model=model.name)
    assert turn.status == "finished" and turn.text == "Trimmed."
    cid = turn.conversation_id
    await rt.append(
        cid,
        [
            NewRow(
                kind="background_report",
                data={"source": "shell", "source_id": "sh_1", "title": ODD, "text": ODD},
            ),
            NewRow(
                kind="message",
                data={"text": ODD, "sender": {"agent": "helper", "conversation": "c_x"}, "hop": 1},
            ),
            NewRow(kind="card", data={"card": "note", "text": ODD}),
            NewRow(kind="user_message", data={"text": ""}),
        ],
    )
    warm, cold = await warm_then_cold(rt, turn.run_id, cid)
    assert_same(warm, cold)
    shown = texts(cold)
    assert "characters trimmed by compact_history" in shown and shown.count(ODD) >= 4

    # "Show full" appends a toggle card: the cold build applies it as the warm one does.
    service = rt_platform.services.require(Compactions)
    await service.show_full(cid)
    warm, cold = await warm_then_cold(rt, turn.run_id, cid)
    assert_same(warm, cold)
    assert "characters trimmed by compact_history" not in texts(cold)
    assert LINE * 400 in texts(cold)
