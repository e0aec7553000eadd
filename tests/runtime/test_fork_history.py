"""A fork's model sees what the original's model saw before the call: compactions made
before it apply in the fork as they did then, and a "Show full" switched on after it does
not reach back into the fork."""

from __future__ import annotations

from corral.platform import Platform
from corral.runtime.compaction import Compactions
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import call
from tests.runtime.recording import Player, Recorder

LINE = "12:00:01 compiled module ok\n"
TRIMMED = "characters trimmed by compact_history"


async def test_a_fork_keeps_the_compactions_the_model_had_then(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Player(
        rt,
        "play:fork",
        {"tool_calls": [call("echo", text=LINE, repeat=400)]},
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
        {"tool_calls": [call("echo", text="second")]},
    )
    turn = await rt_platform.chat("build it", model=model.name)
    assert turn.status == "finished" and turn.text == "Done.", turn
    original = turn.conversation_id
    then = model.seen[2]  # the request in which the model made call_2_0
    assert any(TRIMMED in text for text in then.texts())
    await rt_platform.services.require(Compactions).show_full(original)  # after the call

    forked = await rt_platform.fork(original, "call_2_0")
    assert forked.rows > 0 and forked.at == "call_2_0"
    asked = len(model.seen)
    again = await rt_platform.chat("try again", conversation_id=forked.conversation.id)
    assert again.status == "finished", again
    first = model.seen[asked]
    assert first.texts() == [*then.texts(), "try again"]
    assert not any(LINE * 400 in text for text in first.texts())
    rows = await rt_platform.rows(forked.conversation.id)
    assert [r.data["card"] for r in rows if r.kind == "card"][:2] == ["compaction", "forked"]
    assert all(r.run_id is None for r in rows[: forked.rows + 1])


async def test_a_fork_after_a_rewind_leaves_out_what_the_rewind_hid(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Recorder(
        rt, "fork-rewound", {"tool_calls": [call("echo", text="A")]}, {"text": "First done."}
    )
    turn = await rt_platform.chat("go", model=model.name)
    assert turn.status == "finished", turn
    original = turn.conversation_id
    [first_call] = [r.call_id for r in await rt_platform.rows(original) if r.kind == "tool_call"]
    assert first_call is not None
    await rt_platform.rewind(original, first_call, files=False)
    again = await rt_platform.chat("again", conversation_id=original)
    assert again.status == "finished", again
    then = model.seen[2]  # the request in which the model made the second echo call
    assert "First done." not in then.texts() and "again" in then.texts()
    second_call = [r.call_id for r in await rt_platform.rows(original) if r.kind == "tool_call"][1]
    assert second_call is not None and second_call != first_call

    forked = await rt_platform.fork(original, second_call)
    asked = len(model.seen)
    await rt_platform.chat("and in the fork", conversation_id=forked.conversation.id)
    assert model.seen[asked].texts() == [*then.texts(), "and in the fork"]
