"""connect's ``secret`` never lands in a tool_call row, an approval or its card: the model's
call is stored redacted, the approval keeps the value sealed, and the approved call still
stores the real value as a credential."""

from __future__ import annotations

import json
from pathlib import Path

import corral
from corral.tools.secret_arguments import REDACTED
from tests.conftest import DEMO

SECRET = "sk-live-5ecret-never-stored-in-rows"


def script(tmp_path: Path, *turns: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


ADD = {
    "name": "connect",
    "args": {"add": [{"kind": "credential", "name": "tavily", "secret": SECRET}]},
}


def read_everything(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


async def test_a_parked_connect_keeps_the_secret_sealed_and_the_approved_call_stores_it(
    data_dir: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, {"tool_calls": [ADD]}, {"text": "Stored."})
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("store my key", model=model, profile="balanced")
        assert turn.status == "parked", turn
        [call_row] = [r for r in turn.rows if r.kind == "tool_call"]
        assert call_row.data["args"]["add"][0]["secret"] == REDACTED
        [pending] = await platform.pending_approvals()
        card = json.dumps(pending.to_json())
        assert SECRET not in card and REDACTED in card
        assert pending.sealed and SECRET not in pending.sealed

        await platform.decide_approval(pending.id, "approve")
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished"
        result = await platform.approval_result(pending.id)
        assert result is not None and not result.is_error, result
        assert SECRET not in result.text and SECRET not in json.dumps(result.data)
        owner = await platform.caller()
        assert await platform.credentials.lookup("tavily", user_id=owner.user_id) == SECRET
        done = await platform.runtime.result(turn.run_id)
        assert SECRET not in json.dumps([r.data for r in done.rows], default=str)
    # Nothing on disk holds it in the clear: rows, approvals and credentials alike.
    assert SECRET.encode() not in read_everything(data_dir)


async def test_a_live_call_gets_the_secret_while_its_row_does_not(
    data_dir: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, {"tool_calls": [ADD]}, {"text": "Stored."})
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("store my key", model=model, profile="auto")
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished"
        owner = await platform.caller()
        assert await platform.credentials.lookup("tavily", user_id=owner.user_id) == SECRET
        done = await platform.runtime.result(turn.run_id)
        [call_row] = [r for r in done.rows if r.kind == "tool_call"]
        assert call_row.data["args"]["add"][0]["secret"] == REDACTED
        assert await platform.pending_approvals() == []
    assert SECRET.encode() not in read_everything(data_dir)
