"""The built-in skills' scripts, run for real against a live server on loopback.

A scripted model activates each skill and runs its scripts with cwd "${SKILL_DIR}" in the
sandbox; the scripts authenticate with the run's ticket and call the real routes with curl.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

import corral
from corral.platform import Platform
from corral.runtime.skills import Skills
from corral.shell.service import ShellService
from tests.runtime.conftest import call
from tests.runtime.recording import Recorder
from tests.runtime.test_inbox import settle
from tests.sandbox_owner import passable_folder
from tests.server.live_server import bound_socket, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Live:
    """The platform, its server's URL and a model-script writer."""

    def __init__(self, platform: Platform, url: str, scripts: Path) -> None:
        self.platform = platform
        self.url = url
        self.scripts = scripts
        self.count = 0
        self.last_conversation = ""

    def model(self, *turns: Any) -> str:
        self.count += 1
        path = self.scripts / f"script-{self.count}.json"
        path.write_text(json.dumps({"turns": list(turns)}))
        return f"script:{path}"

    async def run_scripts(
        self, skill: str, *commands: str, user: str | None = None, cid: str | None = None
    ) -> list[str]:
        """One turn: activate ``skill``, then run each command in turn; their outputs."""
        turns: list[Any] = [{"tool_calls": [call("execute", action="skill", skill=skill)]}]
        turns += [
            {"tool_calls": [call("execute", command=c, cwd="${SKILL_DIR}", skill=skill)]}
            for c in commands
        ]
        turns.append({"text": "Done."})
        turn = await self.platform.chat(
            "go", model=self.model(*turns), profile="auto", user=user, conversation_id=cid
        )
        assert turn.status == "finished", turn
        self.last_conversation = turn.conversation_id
        rows = await self.platform.rows(turn.conversation_id, user=user)
        results = [r.data["result"] for r in rows if r.kind == "tool_result"][-len(commands) :]
        return [r["content"][0]["text"] for r in results]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    with passable_folder(tmp_path_factory.mktemp("skills-live"), "skills-live") as root:
        sock = bound_socket()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("CORRAL_")}
        try:
            async with corral.open(root / "data", api_url=url) as platform:
                await platform.admin.set_live("shell_network", True)
                await platform.identity.create_user("ana", role="member")
                await platform.admin.grant_source(
                    "data", principal_kind="role", principal="member", rights="rwx"
                )
                async with serving(platform, sock):
                    yield Live(platform, url, root)
        finally:
            os.environ.update(saved)


async def test_the_execute_skill_lists_reads_and_stops_only_your_shells(live: Live) -> None:
    platform = live.platform
    assert platform.services.require(Skills).api_url == live.url
    started = {}
    for user in (None, "ana"):
        turn = await platform.chat(
            "start",
            model=live.model(
                {
                    "tool_calls": [
                        call(
                            "execute",
                            command="echo started-$USER_TAG; exec sleep 120",
                            env={"USER_TAG": user or "owner"},
                            background=True,
                        )
                    ]
                },
                {"text": "Started."},
            ),
            profile="auto",
            user=user,
        )
        assert turn.status == "finished", turn
        rows = await platform.rows(turn.conversation_id, user=user)
        [result] = [r.data["result"] for r in rows if r.kind == "tool_result"]
        assert "shell_id" in result["data"], result
        started[user or "owner"] = result["data"]["shell_id"]
    background = platform.services.require(ShellService).background
    owner = await platform.caller()
    await background.output(started["owner"], owner, after=0, wait=20)
    mine, theirs = started["owner"], started["ana"]
    listed, output, refused, stopped = await live.run_scripts(
        "execute",
        "bash scripts/shells.sh",
        f"bash scripts/output.sh {mine} --tail 1",
        f"bash scripts/stop.sh {theirs}",
        f"bash scripts/stop.sh {mine}",
    )
    assert mine in listed and theirs not in listed and "running" in listed
    assert "started-owner" in output and f"[{mine} running" in output
    assert "error: not yours to stop" in refused and "[exit code 1" in refused
    assert f"{mine} is stopped" in stopped or f"{mine} is stopping" in stopped, stopped
    assert (await background.get(theirs)).status == "running"
    await background.stop(theirs, await platform.caller("ana"))


def _write_line(path: Path) -> None:
    with path.open("w") as fifo:  # blocks until the detached reader has it open
        fifo.write("go\n")


async def test_the_ticket_works_during_the_run_and_is_dead_after_it(live: Live) -> None:
    platform = live.platform
    drive = Path(platform.settings.drive_dir)
    os.mkfifo(drive / "go")
    probe = 'curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $CORRAL_TICKET"'
    shells = '"$CORRAL_API/shells"'
    turn = await platform.chat(
        "go",
        model=live.model(
            {
                "tool_calls": [
                    call(
                        "execute",
                        command=f'printf %s "$CORRAL_TICKET" > ticket.txt; {probe} {shells}',
                    )
                ]
            },
            {
                "tool_calls": [
                    call(
                        "execute",
                        command=f'read -r line < go; {probe} {shells}; echo " after"',
                        background=True,
                    )
                ]
            },
            {"text": "Done."},
        ),
        profile="auto",
    )
    assert turn.status == "finished", turn
    rows = await platform.rows(turn.conversation_id)
    during, detached = [r.data["result"] for r in rows if r.kind == "tool_result"]
    assert during["content"][0]["text"].startswith("200"), during
    ticket = (drive / "ticket.txt").read_text()
    assert ticket.startswith("ctk_") and ticket not in json.dumps([r.data for r in rows])
    assert await platform.identity.tickets.live_for(turn.run_id) == 0
    async with httpx.AsyncClient(base_url=live.url) as client:
        dead = await client.get("/shells", headers={"Authorization": f"Bearer {ticket}"})
    assert dead.status_code == 401 and "ticket is dead" in dead.json()["detail"]
    await asyncio.to_thread(_write_line, drive / "go")
    background = platform.services.require(ShellService).background
    ended = await background.wait_ended(detached["data"]["shell_id"], 30)
    page = await background.output(ended.id, await platform.caller())
    assert "".join(r["text"] for r in page["rows"]).strip() == "401 after"


async def test_queue_sh_delivers_into_the_inbox_inside_the_envelope(live: Live) -> None:
    rt = live.platform.runtime
    receiver = Recorder(rt, "receiver", {"text": "Got it."})
    target = await rt.start_conversation(model=receiver.name)
    [queued] = await live.run_scripts(
        "manage-conversations", f'bash scripts/queue.sh {target.id} "status of the build?"'
    )
    sender = live.last_conversation
    assert f"Queued for {target.id}" in queued, queued
    await settle(rt, target.id, sender)
    [message] = [r for r in await rt.rows(target.id) if r.kind == "message"]
    assert message.data["sender"]["conversation_id"] == sender
    assert message.data["text"] == "status of the build?"
    seen = json.dumps([m.parts for m in receiver.last.messages], default=str)
    assert '<untrusted_content kind=\\"agent_message\\"' in seen
    assert f"in conversation {sender}" in seen and "status of the build?" in seen


async def test_manage_agents_switches_and_shows_tool_access(live: Live) -> None:
    switched, shown, only, back = await live.run_scripts(
        "manage-agents",
        "bash scripts/agents.sh off default web_fetch",
        "bash scripts/agents.sh show default",
        "bash scripts/agents.sh only default execute fs_read",
        "bash scripts/agents.sh all default",
    )
    assert "default: all mode, switched off: web_fetch" in switched
    assert "off web_fetch (core)" in shown and "on  execute (core)" in shown
    assert "default: custom allowlist: execute, fs_read" in only
    assert "default: all mode, switched off: none" in back
    [refused] = await live.run_scripts(
        "manage-agents", "bash scripts/agents.sh off default web_fetch", user="ana"
    )
    assert "error: this needs feature 'admin.settings'" in refused


async def test_manage_workflows_scripts_reach_the_workflow_routes(live: Live) -> None:
    platform = live.platform
    token = await platform.identity.create_token("owner")
    async with httpx.AsyncClient(
        base_url=live.url, headers={"Authorization": f"Bearer {token.token}"}
    ) as client:
        made = await client.post("/workflows", json={"title": "Digest", "instruction": "Sum up."})
        assert made.status_code == 201, made.text
        wid = made.json()["workflow_id"]
        hook = (await client.post(f"/workflows/{wid}/hooks", json={})).json()
        key = (await client.post(f"/workflows/{wid}/hooks/{hook['hook_id']}/keys")).json()
    outputs = await live.run_scripts(
        "manage-workflows",
        f"bash scripts/workflows.sh save-template digest {wid}",
        "bash scripts/workflows.sh templates",
        f"bash scripts/workflows.sh hooks {wid}",
        f"bash scripts/workflows.sh revoke-key {wid} {key['key_id']}",
        f"bash scripts/workflows.sh archive {wid}",
        f"bash scripts/workflows.sh restore {wid}",
        f"bash scripts/workflows.sh archive {wid}",
        f"bash scripts/workflows.sh delete {wid}",
        "bash scripts/workflows.sh cancel r_nothing",
    )
    saved, templates, hooks, revoked, archived, restored, _, deleted, cancel = outputs
    assert "error" not in saved and '"digest"' in templates
    assert hook["hook_id"] in hooks and "error" not in revoked
    assert '"archived"' in archived and '"active"' in restored and "error" not in deleted
    assert "error: " in cancel and "r_nothing" in cancel


async def test_delegate_scripts_show_stop_and_continue_a_run(live: Live) -> None:
    platform = live.platform
    child = live.model({"text": "First answer."}, {"text": "Second answer."})
    parent = await platform.chat(
        "delegate",
        model=live.model(
            {"tool_calls": [call("delegate", task="Look into it", model=child)]},
            {"text": "Parent got it."},
        ),
        profile="auto",
    )
    assert parent.status == "finished", parent
    token = await platform.identity.create_token("owner")
    async with httpx.AsyncClient(
        base_url=live.url, headers={"Authorization": f"Bearer {token.token}"}
    ) as client:
        listed = await client.get(f"/conversations/{parent.conversation_id}/delegates")
    [run] = listed.json()["delegates"]
    status, stopped, continued = await live.run_scripts(
        "delegate",
        f"bash scripts/status.sh {run['run_id']}",
        f"bash scripts/stop.sh {run['run_id']}",
        f'bash scripts/continue.sh {run["run_id"]} "now check the tests"',
    )
    assert f"{run['run_id']}: finished" in status and "task: Look into it" in status
    assert "First answer." in status
    assert "is finished" in stopped, stopped
    assert "Continued as run r_" in continued, continued
    await settle(platform.runtime, parent.conversation_id, live.last_conversation)


async def test_a_ticket_cannot_make_a_persons_decisions(live: Live) -> None:
    curl = 'curl -s -o /dev/null -w "%{http_code} " -H "Authorization: Bearer $CORRAL_TICKET"'
    json_body = "-H 'Content-Type: application/json' -d '{}'"
    routes = [
        "$CORRAL_API/shells",
        f"-X POST {json_body} $CORRAL_API/approvals/ap_x/decision",
        f"-X POST {json_body} $CORRAL_API/questions/q_x/answer",
        f"-X PUT {json_body} $CORRAL_API/conversations/$SESSION_ID/goal",
        f"-X POST {json_body} $CORRAL_API/tools/execute/call",
        f"-X PUT {json_body} $CORRAL_API/settings/live/shell_network",
        f"-X POST {json_body} $CORRAL_API/workflows/w_x/hooks/h_x/keys",
        f"-X POST {json_body} $CORRAL_API/channels",
        "-X POST $CORRAL_API/channels/pairing/c_x/approve",
        "-X POST $CORRAL_API/channels/pairing/c_x/reject",
        "-X DELETE $CORRAL_API/channels/tg",
    ]
    command = "; ".join(f"{curl} {route}" for route in routes)
    turn = await live.platform.chat(
        "try",
        model=live.model({"tool_calls": [call("execute", command=command)]}, {"text": "No."}),
        profile="auto",
    )
    rows = await live.platform.rows(turn.conversation_id)
    [result] = [r.data["result"] for r in rows if r.kind == "tool_result"]
    codes = result["content"][0]["text"].split("\n")[0].split()
    assert codes == ["200", *["403"] * 10], result
