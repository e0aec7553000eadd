"""A run claimed for advancing is answered by the claim itself, as a read would give it."""

from __future__ import annotations

import pytest

from corral.platform import Platform
from corral.runtime.runtime import Runtime
from corral.store import runtime_tables as rt_tables
from tests.runtime.conftest import ScriptWriter


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "write-then-read"])
async def test_a_claim_answers_the_run_as_a_read_after_it_would(
    rt_platform: Platform,
    rt: Runtime,
    write_script: ScriptWriter,
    monkeypatch: pytest.MonkeyPatch,
    returning: bool,
) -> None:
    if not returning:  # a database without UPDATE … RETURNING
        monkeypatch.setattr(rt.kernel.engine.dialect, "update_returning", False)
    turn = await rt_platform.chat("hi", model=write_script({"text": "hello"}))
    before = await rt.runs.get(turn.run_id)
    assert await rt.runs.claim(turn.run_id, from_statuses=["queued"], to="running") is None
    claimed = await rt.runs.claim(
        turn.run_id,
        from_statuses=["finished"],
        to="stopped",
        worker="w-test",
        lease=rt_tables.Run.lease + 1,
    )
    assert claimed is not None
    assert (claimed.status, claimed.worker) == ("stopped", "w-test")
    assert claimed.lease == before.lease + 1 and claimed.ended_at is not None
    assert claimed == await rt.runs.get(turn.run_id)
