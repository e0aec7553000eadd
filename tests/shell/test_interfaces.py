"""The ways in: the execute tool in the pipeline, the CLI, and the shells routes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.platform import Platform
from corral.server import create_app
from tests.shell.conftest import AllowReaders, FakeReports, needs_bwrap, shells


async def cli(data_dir: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "corral",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "CORRAL_DATA_DIR": str(data_dir)},
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_execute_is_visible_and_refuses_before_approval(platform: Platform) -> None:
    assert "execute" in {t.name for t in await platform.visible_tools()}
    refused = await platform.call_tool("execute", {"command": "sudo id"}, profile="safe")
    assert refused.error_code == "policy_denied" and refused.status == "error"
    assert refused.data is not None and refused.data["error"]["guard"] == "analysis"
    assert await platform.pending_approvals() == []
    parked = await platform.call_tool("execute", {"command": "echo hi"}, profile="safe")
    assert parked.error_code == "approval_pending"
    skill = await platform.call_tool("execute", {"action": "skill", "skill": "x"})
    assert skill.error_code == "unknown_skill" and "there is no skill 'x'" in skill.text


async def test_check_command_cli_exit_codes(data_dir: Path) -> None:
    code, out, _ = await cli(data_dir, "check-command", "ls -la", "--json")
    verdict = json.loads(out)
    assert code == 0 and verdict["allowed"] and verdict["plane"] == "app"
    code, _, err = await cli(data_dir, "check-command", "cat /etc/shadow")
    assert code == 3 and "refused by analysis, rule protected_path" in err
    code, out, _ = await cli(data_dir, "check-command", "cp a.txt /opt/x", "--json")
    assert code == 3
    assert {k: json.loads(out)[k] for k in ("guard", "rule", "word")} == {
        "guard": "uri_policy",
        "rule": "rights",
        "word": "/opt/x",
    }
    code, _, err = await cli(data_dir, "check-command", "ls", "--cwd", "sys-usr://")
    assert code == 3 and "exec access" in err


@needs_bwrap
async def test_shells_cli_reads_and_stops_a_shell_another_process_runs(
    fast: Platform, data_dir: Path
) -> None:
    done = await fast.call_tool("execute", {"command": "echo from-cli-test", "background": True})
    assert done.data is not None
    finished = await shells(fast).background.wait_ended(done.data["shell_id"], 10)
    running = await fast.call_tool("execute", {"command": "sleep 4904", "background": True})
    assert running.data is not None
    running_id = running.data["shell_id"]
    code, out, _ = await cli(data_dir, "shells", "list", "--json")
    listed = {s["id"]: s["status"] for s in json.loads(out)}
    assert code == 0 and listed == {finished.id: "exited", running_id: "running"}
    code, out, _ = await cli(data_dir, "shells", "output", finished.id)
    assert code == 0 and out == "from-cli-test\n"
    code, out, _ = await cli(data_dir, "shells", "stop", running_id)
    assert code == 0
    record = await shells(fast).background.wait_ended(running_id, 10)
    assert record.status == "stopped" and record.stop_requested_by == "u_owner"


@pytest.fixture
async def client(fast: Platform) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(fast))
    async with httpx.AsyncClient(transport=transport, base_url="http://corral") as http:
        yield http


async def token(platform: Platform, user: str) -> dict[str, str]:
    created = await platform.identity.create_token(user, "test")
    return {"Authorization": f"Bearer {created.token}"}


@needs_bwrap
async def test_routes_read_for_readers_and_stop_only_for_the_starter(
    fast: Platform, client: httpx.AsyncClient
) -> None:
    fast.provide(reports=FakeReports())
    await fast.identity.create_role("dev", ["core.exec"])
    bob = await fast.identity.create_user("bob", "dev")
    owner_auth, bob_auth = await token(fast, "owner"), await token(fast, "bob")
    started = await fast.call_tool(
        "execute", {"command": "echo hello; sleep 4905", "background": True}, conversation_id="c9"
    )
    assert started.data is not None
    shell_id = started.data["shell_id"]
    page: dict[str, Any] = {"rows": []}
    for _ in range(20):  # a long poll: each request waits for output, none sleeps
        response = await client.get(
            f"/shells/{shell_id}/output", params={"wait": 5}, headers=owner_auth
        )
        page = response.json()
        if page["rows"]:
            break
    assert page["rows"][0]["text"] == "hello\n" and page["shell"]["status"] == "running"
    assert (await client.get(f"/shells/{shell_id}", headers=bob_auth)).status_code == 404
    fast.provide(conversation_access=AllowReaders(bob))
    listed = await client.get("/shells", params={"conversation_id": "c9"}, headers=bob_auth)
    assert [s["id"] for s in listed.json()["shells"]] == [shell_id]
    denied = await client.post(f"/shells/{shell_id}/stop", headers=bob_auth)
    assert denied.status_code == 403 and "not yours to stop" in denied.json()["detail"]
    stopped = await client.post(f"/shells/{shell_id}/stop", headers=owner_auth)
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    status = (await client.get(f"/shells/{shell_id}", headers=bob_auth)).json()
    assert status["report"]["data"]["status"] == "stopped"
