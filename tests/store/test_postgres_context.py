"""The context tools on PostgreSQL: concurrent todos calls, a question, a compaction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import corral
from corral.runtime.compaction import Compactions
from corral.runtime.goals import Goals
from corral.runtime.questions import Questions
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, call


async def test_context_tools_on_postgresql(
    data_dir: Path, database_url: str, tmp_path: Path
) -> None:
    ask = call("ask_question", questions=[{"question": "Go?", "options": ["yes", "no"]}])
    trim = call("compact_history", action="remove", targets=[{"sequence": 1}])
    script = tmp_path / "script.json"
    turns = [{"tool_calls": [ask]}, {"tool_calls": [trim]}, {"text": "done"}]
    script.write_text(json.dumps({"turns": turns}))
    model = f"script:{script}"
    async with corral.open(
        data_dir, database_url=database_url, package_paths=[DEMO, RTKIT]
    ) as platform:
        rt = platform.runtime
        cid = (await rt.start_conversation()).id
        results = await asyncio.gather(
            *(
                platform.call_tool("todos", {"plan": {"steps": [f"s{i}"]}}, conversation_id=cid)
                for i in range(6)
            )
        )
        assert not any(r.is_error for r in results), [r.text for r in results]
        steps = (await platform.services.require(Goals).state(cid)).steps
        assert sorted(s.id for s in steps) == [1, 2, 3, 4, 5, 6]
        done = await platform.call_tool(
            "todos",
            {"mark": {"steps": [{"id": i, "status": "done"} for i in range(1, 7)]}},
            conversation_id=cid,
        )
        assert "cycle v1 completed" in done.text
        assert [e["version"] for e in await platform.services.require(Goals).ledger(cid)] == [1]

        turn = await platform.chat("long " * 300, model=model)
        assert turn.status == "parked"
        await platform.services.require(Questions).answer(turn.questions[0], ["yes"])
        assert (await rt.wait_run(turn.run_id)).status == "finished"
        [made] = await platform.services.require(Compactions).list_compactions(turn.conversation_id)
        assert made["applied"] is True and made["tokens_saved"] > 100
