"""Rewind over HTTP, served by uvicorn on loopback: list a conversation's checkpoints,
preview a rewind, do it; 409 with the conflicts when refused, 409 while a run is parked,
403 for files the caller may not write, 404 for a conversation the caller may not see."""

from __future__ import annotations

from pathlib import Path

import httpx

from corral.platform import Platform
from corral.server import create_app
from tests.server.loopback import serving
from tests.shell.conftest import needs_bwrap
from tests.shell.test_checkpoints import describe
from tests.shell.test_rewind_run import Script, project

pytestmark = needs_bwrap


async def test_checkpoints_preview_and_rewind_over_http(platform: Platform, data_dir: Path) -> None:
    drive = data_dir / "drive"
    await platform.admin.set_live("checkpoints", True)
    start = project(drive, platform.kernel.settings.sandbox_uid)
    cwd = str(drive / "proj")
    model = Script(platform, "script:http")
    model.call("c1", "execute", command="sed -i s/one/two/ a.txt && rm -r sub", cwd=cwd)
    model.call("c2", "execute", command="chmod 700 run.sh", cwd=cwd)
    model.say("Done.")
    model.call("p1", "execute", command="rm b.txt", cwd=cwd)
    model.call("p2", "ask_question", questions=[{"question": "Go on?", "options": ["y", "n"]}])
    turn = await platform.chat("go", model=model.name, profile="auto")
    cid = turn.conversation_id
    parked = await platform.chat("more", model=model.name, profile="auto")
    assert parked.status == "parked", parked

    owner = (await platform.identity.create_token("owner")).token
    await platform.identity.create_user("mia", "member")
    mia = (await platform.identity.create_token("mia")).token
    await platform.identity.create_role("auditor", ["conversations.manage"])
    await platform.identity.create_user("dana", "auditor")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="auditor", rights="rx"
    )
    dana = (await platform.identity.create_token("dana")).token
    app = create_app(platform)
    async with serving(app) as base:
        api = httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {owner}"}, timeout=60
        )
        async with api:
            steps = (await api.get(f"/conversations/{cid}/checkpoints")).json()["checkpoints"]
            assert [(s["step"], s["id"], s["tool"]) for s in steps] == [
                (1, "c1", "execute"),
                (2, "c2", "execute"),
            ]
            shown = await api.get(f"/conversations/{cid}/rewind/preview", params={"to": "c1"})
            assert shown.status_code == 200, shown.text
            preview = shown.json()
            paths = {f["path"]: f for f in preview["files"]}
            assert "-two\n+one\n" in paths["proj/a.txt"]["diff"]
            assert paths["proj/sub/y.bin"]["binary"] and paths["proj/run.sh"]["mode_then"] == "0755"
            assert {r["call_id"] for r in preview["conversation"]["rows"]} >= {"c1", "c2"}
            assert preview["blocked"] is None and preview["conflicts"] == []
            bad = await api.get(f"/conversations/{cid}/rewind/preview", params={"to": "zz"})
            assert bad.status_code == 400 and "no step, checkpoint or tool call" in bad.text
            missing = await api.get("/conversations/c_none/rewind/preview", params={"to": "1"})
            assert missing.status_code == 404
            neither = {"to": "c1", "files": False, "conversation": False}
            assert (await api.post(f"/conversations/{cid}/rewind", json=neither)).status_code == 400
            busy = await api.post(
                f"/conversations/{parked.conversation_id}/rewind", json={"to": "p1"}
            )
            assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"
            assert "parked" in busy.json()["detail"]

            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {mia}"}, timeout=60
            ) as other:
                hidden = await other.get(f"/conversations/{cid}/checkpoints")
                assert hidden.status_code == 404
            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {dana}"}, timeout=60
            ) as auditor:
                denied = await auditor.post(
                    f"/conversations/{cid}/rewind", json={"to": "c1", "files": True}
                )
                assert denied.status_code == 403 and "write access" in denied.text

            (drive / "proj" / "run.sh").chmod(0o711)  # a person changes it after the run
            changed = describe(drive / "proj")
            refused = await api.post(f"/conversations/{cid}/rewind", json={"to": "c1"})
            assert refused.status_code == 409, refused.text
            body = refused.json()
            assert body["code"] == "conflicts"
            assert [c["path"] for c in body["conflicts"]] == ["proj/run.sh"]
            assert describe(drive / "proj") == changed
            done = await api.post(f"/conversations/{cid}/rewind", json={"to": "c1", "force": True})
            assert done.status_code == 200, done.text
            assert done.json()["forced"] and done.json()["conversation"]["marker_seq"]
    del start["b.txt"]  # the parked conversation removed it: not this one's to give back
    assert describe(drive / "proj") == start
    assert await platform.checkpoints(cid) == []
