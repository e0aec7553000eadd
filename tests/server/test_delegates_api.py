"""Routes of delegate runs: list a conversation's, show one, continue one, stop one."""

from __future__ import annotations

from pathlib import Path

import httpx

from corral.platform import Platform
from tests.runtime.conftest import call
from tests.server.test_conversations_api import api_platform, http, script

__all__ = ["api_platform", "http"]  # the fixtures these tests use


async def test_list_show_and_continue_a_delegate_run_over_http(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    child = script(tmp_path, {"text": "First answer."}, {"text": "Second answer."})
    parent = script(
        tmp_path,
        {"tool_calls": [call("delegate", task="Look into it", model=child)]},
        {"when_result_contains": "First answer.", "text": "Parent got the first."},
        {"when_message_contains": "Second answer.", "text": "Parent got the second."},
    )
    body = {"message": "go", "model": parent, "profile": "auto"}
    turn = (await http.post("/chat", json=body)).json()
    assert turn["status"] == "finished", turn
    cid = turn["conversation_id"]
    [listed] = (await http.get(f"/conversations/{cid}/delegates")).json()["delegates"]
    assert listed["status"] == "finished" and listed["task"] == "Look into it"
    shown = (await http.get(f"/delegates/{listed['run_id']}")).json()
    assert "First answer." in shown["answer"] and shown["transcript_uri"].endswith(".jsonl")
    assert (await http.get(f"/delegates/{turn['run_id']}")).status_code == 404
    blank = await http.post(f"/delegates/{listed['run_id']}/continue", json={"message": ""})
    assert blank.status_code == 422
    more = await http.post(f"/delegates/{listed['run_id']}/continue", json={"message": "more"})
    assert more.status_code == 200, more.text
    continued = more.json()
    rt = api_platform.runtime
    assert (await rt.wait_run(continued["id"])).status == "finished"
    await rt.wait_idle(cid)
    last = (await rt.runs.list_runs(conversation_id=cid, limit=1))[0]
    assert (await rt.result(last.id)).text == "Parent got the second."
    again = await http.post(f"/delegates/{listed['run_id']}/continue", json={"message": "x"})
    assert again.status_code == 400 and "continued already" in again.json()["detail"]
    stopped = await http.post(f"/delegates/{continued['id']}/stop")
    assert stopped.status_code == 200 and stopped.json()["status"] == "finished"
