"""`corral serve` in a real process on loopback, driven over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import DEMO


def cli(data_dir: Path, *args: str) -> str:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir), "CORRAL_PACKAGE_PATH": str(DEMO)}
    done = subprocess.run(
        [sys.executable, "-m", "corral", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout


@pytest.fixture
def server(data_dir: Path) -> Iterator[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir), "CORRAL_PACKAGE_PATH": str(DEMO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "corral", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    url = None
    seen = []
    for line in process.stdout:
        seen.append(line)
        # serve binds first and names the address in its sign-in line; uvicorn then says
        # when the app is ready (it names no address for a socket handed to it)
        match = re.search(r"web UI: (http://127\.0\.0\.1:\d+)/", line)
        if match:
            url = match.group(1)
        if "Application startup complete" in line:
            break
    # keep draining the log so the server never blocks on a full pipe
    drain = threading.Thread(target=lambda: seen.extend(process.stdout or ()), daemon=True)
    drain.start()
    try:
        assert url, "".join(seen)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        drain.join(10)
        process.stdout.close()


def test_health_tools_calls_and_auth(server: str, data_dir: Path) -> None:
    owner_token = cli(data_dir, "tokens", "create", "owner").strip().splitlines()[-1]
    cli(data_dir, "users", "add", "max", "--role", "member")
    member_token = cli(data_dir, "tokens", "create", "max").strip().splitlines()[-1]
    with httpx.Client(base_url=server, timeout=10) as http:
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["tools"] >= 5
        assert health["hook_problems"] == 0
        assert http.get("/tools").status_code == 401
        assert http.get("/tools", headers={"Authorization": "Bearer wrong"}).status_code == 401
        owner = {"Authorization": f"Bearer {owner_token}"}
        member = {"Authorization": f"Bearer {member_token}"}
        names = {t["name"] for t in http.get("/tools", headers=owner).json()["tools"]}
        assert {"echo", "write_note"} <= names
        member_names = {t["name"] for t in http.get("/tools", headers=member).json()["tools"]}
        assert "echo" in member_names

        called = http.post(
            "/tools/echo/call", headers=owner, json={"arguments": {"text": "over http"}}
        ).json()
        assert called["content"][0]["text"] == "over http"
        bad = http.post("/tools/echo/call", headers=owner, json={"arguments": {}}).json()
        assert bad["error_code"] == "invalid_arguments"

        parked = http.post(
            "/tools/write_note/call",
            headers=owner,
            json={"arguments": {"path": "h.md", "text": "x"}, "profile": "safe"},
        ).json()
        approval_id = parked["data"]["approval_id"]
        assert [a["id"] for a in http.get("/approvals", headers=owner).json()["approvals"]] == [
            approval_id
        ]
        assert http.get("/approvals", headers=member).json()["approvals"] == []
        decided = http.post(
            f"/approvals/{approval_id}/decision", headers=owner, json={"decision": "approve"}
        ).json()
        assert decided["result"]["status"] == "pending"  # the call runs after the answer
        shown = http.get(f"/approvals/{approval_id}?wait=30", headers=owner).json()
        assert shown["status"] == "approved" and shown["result"]["is_error"] is False
        assert (data_dir / "drive" / "h.md").read_text() == "note:x"
        assert http.get(f"/approvals/{approval_id}", headers=member).status_code == 404
        twice = http.post(
            f"/approvals/{approval_id}/decision", headers=owner, json={"decision": "deny"}
        )
        assert twice.status_code == 409
        assert "already decided by owner from the API" in twice.json()["detail"]

        assert (
            http.put(
                "/settings/live/perf_slow_tool_ms", headers=member, json={"value": 10}
            ).status_code
            == 403
        )
        changed = http.put("/settings/live/perf_slow_tool_ms", headers=owner, json={"value": 10})
        assert changed.json() == {"key": "perf_slow_tool_ms", "value": 10}
        assert http.get("/settings/live", headers=owner).json()["perf_slow_tool_ms"] == 10
        assert http.get("/openapi.json").status_code == 200
