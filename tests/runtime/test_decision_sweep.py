"""The decisions sweep: an expired decision ends as a denial, a decided run that never
resumed is resumed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import corral
from corral.errors import AlreadyDecided
from corral.runtime.decision_sweep import DecisionSweep
from corral.store.tables import utcnow
from tests.conftest import DEMO
from tests.runtime.conftest import ScriptWriter, call

WRITE = call("write_note", path="data://note.md", text="hello")
AFTER = [
    {"when_result_contains": "denied", "text": "I was not allowed, so I left it."},
    {"when_result_contains": "wrote", "text": "The note is written."},
]


async def test_an_expired_approval_ends_as_a_denial_and_the_run_goes_on(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [WRITE]}, AFTER)
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("write a note", model=model, profile="balanced")
        [approval_id] = turn.approvals
        sweep = DecisionSweep(platform.runtime)
        # Not yet due (the default is 7 days): nothing ends.
        early = await sweep.tick(utcnow() + timedelta(days=6))
        assert early.expired == () and early.resumed == ()
        await platform.admin.set_live("decisions_expire_days", 2)
        swept = await sweep.tick(utcnow() + timedelta(days=3))
        assert swept.expired == (approval_id,)
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished"
        done = await platform.runtime.result(turn.run_id)
        assert done.text == "I was not allowed, so I left it."
        result = next(r for r in done.rows if r.kind == "tool_result").data["result"]
        assert result["status"] == "denied" and "expired at" in result["content"][0]["text"]
        record = await platform.approvals.get(approval_id)
        assert record.status == "denied" and "without an answer" in (record.note or "")
        decision = await platform.decisions.get(approval_id)
        assert decision.status == "expired"
        with pytest.raises(AlreadyDecided, match=r"expired at .* without an answer"):
            await platform.decide_approval(approval_id, "approve")
    assert not (data_dir / "drive" / "note.md").exists()


async def test_the_sweep_resumes_a_decided_run_that_never_resumed(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [WRITE]}, AFTER)
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("write a note", model=model, profile="balanced")
        [approval_id] = turn.approvals
        owner = await platform.caller()
        # The answer is recorded, then its process dies before it queues the run.
        await platform.approvals.claim(
            approval_id, "approve", by=owner.user_id, note=None, surface="http"
        )
        assert (await platform.runtime.runs.get(turn.run_id)).status == "parked"
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        assert (await rt.runs.get(turn.run_id)).status == "parked"
        swept = await DecisionSweep(rt).tick()
        assert swept.resumed == (turn.run_id,) and swept.expired == ()
        final = await rt.wait_run(turn.run_id)
        assert final.status == "finished"
        assert (await rt.result(turn.run_id)).text == "The note is written."
    assert (data_dir / "drive" / "note.md").read_text() == "note:hello"
