"""Overlaid prompt builds: incremental yet equal to full builds, and fast with 200 trims."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.platform import Platform
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt.history import History, RenderContext
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from tests.runtime.conftest import ScriptWriter
from tests.runtime.test_prompt import KINDS, build, fill_ten_thousand_rows, row, shape


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=36),
    st.lists(st.frozensets(st.integers(1, 36), max_size=6), min_size=1, max_size=8),
)
async def test_overlaid_incremental_builds_equal_full_builds(
    rt: Runtime, kinds_: list[str], trim_sets: list[frozenset[int]]
) -> None:
    owner = await rt.kernel.caller()
    state = await rt.kernel.config.dispatch_state()
    context = RenderContext(
        media=MediaSupport(), reader=rt.prompt.reader, caller=owner, sources=state.sources
    )
    ok = {"content": [{"type": "text", "text": "r"}], "status": "ok"}
    growing = History()
    made: dict[int, TimelineRow] = {}
    calls: list[str] = []
    for seq, kind in enumerate(kinds_, start=1):
        if kind == "tool_call":
            calls.append(f"c{seq}")
            new = row(seq, kind, f"c{seq}", tool="echo", args={})
        elif kind == "tool_result":
            new = row(seq, kind, calls[-1] if calls else "none", tool="echo", result=ok)
        else:
            new = row(seq, kind, text=f"t{seq}", title="r", source="shell", source_id="s")
        growing.extend([new])
        trims = trim_sets[seq % len(trim_sets)]
        if trims:
            shown: list[TimelineRow] = []
            for r in growing.rows:
                if r.seq in trims:
                    if r.seq not in made:  # memoised, as the compaction index does
                        made[r.seq] = replace(r, data={**r.data, "text": "[trimmed]"})
                    r = made[r.seq]
                shown.append(r)
            rows: list[TimelineRow] = shown
        else:
            rows = growing.rows
        incremental = growing.messages(rows, context)
        assert shape(incremental) == shape(History().messages(rows, context))


async def test_two_hundred_compactions_keep_warm_builds_incremental(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("start", model=write_script({"text": "ok"}))
    cid = turn.conversation_id
    await fill_ten_thousand_rows(rt, cid)
    for i in range(200):
        result = await rt_platform.call_tool(
            "compact_history",
            {"action": "truncate", "targets": [{"tool_use_id": f"k{i * 12}"}], "keep_chars": 100},
            conversation_id=cid,
        )
        assert not result.is_error, result.text
    cold = await build(rt, turn.run_id)  # reads every row, works out the 200 trims
    await rt.append(cid, [NewRow(kind="user_message", data={"text": "more"})])
    prompt = await build(rt, turn.run_id)
    # Speed is measured in bench/prompt.py; this checks what makes it fast: with the 200
    # trims in place a build after one new row still reuses every earlier message.
    kept = len(cold.messages) - 1
    assert all(a is b for a, b in zip(cold.messages[:kept], prompt.messages[:kept], strict=True))
    returns = [
        part
        for message in prompt.messages
        for part in message.parts
        if getattr(part, "tool_call_id", None) == "k12" and part.part_kind == "tool-return"
    ]
    assert "characters trimmed by compact_history" in str(returns[0].content)
