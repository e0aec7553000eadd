"""Routes of the context tools: questions, goals, meta, compactions, /summarize."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from corral.platform import Platform
from tests.runtime.conftest import call
from tests.server.test_conversations_api import api_platform, http, script

__all__ = ["api_platform", "http"]  # the fixtures these tests use

ASK = call("ask_question", questions=[{"question": "Proceed?", "options": ["yes", "no"]}])
TRIM = call("compact_history", action="truncate", targets=[{"sequence": 1}], keep_chars=100)


async def test_a_question_is_answered_over_http(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [ASK]},
        [{"when_result_contains": "→ yes", "text": "Going ahead."}, {"text": "Stopping."}],
    )
    turn = (await http.post("/chat", json={"message": "go", "model": model})).json()
    assert turn["status"] == "parked"
    listed = (await http.get("/questions")).json()["questions"]
    assert [q["id"] for q in listed] == [turn["waiting"][0]["id"]]
    missing = await http.post("/questions/q_nope/answer", json={"answers": ["yes"]})
    assert missing.status_code == 404
    bad = await http.post(f"/questions/{listed[0]['id']}/answer", json={"answers": [5]})
    assert bad.status_code == 400 and "option 5" in bad.json()["detail"]
    answered = await http.post(f"/questions/{listed[0]['id']}/answer", json={"answers": [1]})
    assert answered.status_code == 200 and answered.json()["answers"] == ["yes"]
    final = await api_platform.runtime.wait_run(turn["run_id"])
    assert final.status == "finished"
    run = (await http.get(f"/runs/{turn['run_id']}")).json()
    assert run["text"] == "Going ahead."
    assert (await http.get("/questions", params={"status": "all"})).json()["questions"]


async def test_goal_meta_compactions_and_summarize_over_http(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    model = script(tmp_path, {"tool_calls": [TRIM]}, {"text": "ok"})
    turn = (await http.post("/chat", json={"message": "word " * 500, "model": model})).json()
    cid = turn["conversation_id"]
    body = {"goal": "Ship", "conditions": ["green"], "workflow": "release", "loop": 3}
    state = (await http.put(f"/conversations/{cid}/goal", json=body)).json()
    assert state["goal"]["set_by"] == {"kind": "workflow", "name": "release", "evolve": False}
    again = await http.put(f"/conversations/{cid}/goal", json={"goal": "Other"})
    assert again.status_code == 400 and "replace" in again.json()["detail"]
    cleared = (await http.delete(f"/conversations/{cid}/goal")).json()
    assert cleared["goal"] is None and cleared["loop"] is None

    [made] = (await http.get(f"/conversations/{cid}/compactions")).json()["compactions"]
    assert made["action"] == "truncate" and made["applied"] is True
    off = await http.put(
        f"/conversations/{cid}/compactions/{made['id']}/applied", json={"applied": False}
    )
    assert off.json()["applied"] is False
    unknown = await http.put(
        f"/conversations/{cid}/compactions/cp_nope/applied", json={"applied": False}
    )
    assert unknown.status_code == 404
    await http.put(f"/conversations/{cid}/compactions/{made['id']}/applied", json={"applied": True})
    shown = (await http.post(f"/conversations/{cid}/show-full")).json()["compactions"]
    assert [c["applied"] for c in shown] == [False]

    writer_file = tmp_path / "summary.json"
    writer_file.write_text(json.dumps({"turns": [], "final_text": "A short summary."}))
    writer = f"script:{writer_file}"
    summary = (await http.post(f"/conversations/{cid}/summarize", json={"model": writer})).json()
    assert summary["summary"] == "A short summary." and summary["source"] == "summarize"
    meta = (await http.get(f"/conversations/{cid}/meta")).json()
    assert [e["outcome"] for e in meta["sessionLedger"]] == ["cleared"]
    assert meta["sessionLedger"][0]["goal"]["text"] == "Ship"
    assert [c["applied"] for c in meta["compactions"]] == [False, True]
    foreign = await http.get("/conversations/c_nope/meta")
    assert foreign.status_code == 404
