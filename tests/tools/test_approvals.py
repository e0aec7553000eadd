"""Approvals: a parked call survives a restart and runs when approved, in a new process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import corral
from corral.errors import NotFound
from corral.platform import Platform
from tests.conftest import DEMO


def corral_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir), "CORRAL_PACKAGE_PATH": str(DEMO)}
    return subprocess.run(
        [sys.executable, "-m", "corral", *args], capture_output=True, text=True, env=env
    )


def test_approval_pending_across_a_restart_then_approved(data_dir: Path) -> None:
    call = corral_cli(
        data_dir,
        "tools",
        "call",
        "write_note",
        json.dumps({"path": "data://a.md", "text": "hi"}),
        "--profile",
        "balanced",
        "--json",
    )
    assert call.returncode == 1, call.stderr
    pending = json.loads(call.stdout)
    assert pending["error_code"] == "approval_pending" and pending["status"] == "pending"
    approval_id = pending["data"]["approval_id"]
    assert not (data_dir / "drive" / "a.md").exists()

    listed = corral_cli(data_dir, "approvals", "list", "--json")
    assert [a["id"] for a in json.loads(listed.stdout)] == [approval_id]

    decided = corral_cli(data_dir, "approvals", "decide", approval_id, "approve", "--json")
    assert decided.returncode == 0, decided.stderr
    result = json.loads(decided.stdout)
    assert not result["is_error"] and "wrote data://a.md" in result["content"][0]["text"]
    assert (data_dir / "drive" / "a.md").read_text() == "note:hi"

    again = corral_cli(data_dir, "approvals", "decide", approval_id, "deny")
    assert again.returncode == 2
    said = " ".join(again.stderr.split())
    assert "already decided by owner from the terminal at" in said


async def test_denied_call_returns_the_refusal_and_never_runs(
    platform: Platform, data_dir: Path
) -> None:
    parked = await platform.call_tool("write_note", {"path": "b.md", "text": "x"}, profile="safe")
    assert parked.error_code == "approval_pending"
    approval_id = parked.data["approval_id"]  # type: ignore[index]
    denied = await platform.decide_approval(approval_id, "deny", note="not now")
    assert denied.error_code == "approval_denied" and denied.status == "denied"
    assert "not now" in denied.text
    assert not (data_dir / "drive" / "b.md").exists()
    record = await platform.approvals.get(approval_id)
    assert record.status == "denied" and record.result is not None
    assert record.result["error_code"] == "approval_denied"


async def test_profiles_decide_who_asks(platform: Platform) -> None:
    # read-only tools never ask; destructive ones ask under safe and balanced only
    assert not (await platform.call_tool("echo", {"text": "x"}, profile="safe")).is_error
    auto = await platform.call_tool("write_note", {"path": "c.md", "text": "x"}, profile="auto")
    assert not auto.is_error
    for profile in ("safe", "balanced"):
        parked = await platform.call_tool(
            "write_note", {"path": "c.md", "text": "x"}, profile=profile
        )
        assert parked.error_code == "approval_pending"


async def test_refusals_happen_before_parking(platform: Platform) -> None:
    result = await platform.call_tool("write_note", {"path": "/etc/x", "text": "x"}, profile="safe")
    assert result.error_code == "policy_denied"
    assert await platform.pending_approvals() == []


async def test_only_the_caller_may_decide(platform: Platform) -> None:
    await platform.identity.create_user("mia", "admin")
    parked = await platform.call_tool("write_note", {"path": "d.md", "text": "x"}, profile="safe")
    approval_id = parked.data["approval_id"]  # type: ignore[index]
    # The same answer as for an unknown id: nothing tells that the approval exists.
    with pytest.raises(NotFound) as theirs:
        await platform.decide_approval(approval_id, "approve", user="mia")
    with pytest.raises(NotFound) as unknown:
        await platform.decide_approval("a_unknown", "approve", user="mia")
    assert str(theirs.value) == str(unknown.value).replace("a_unknown", approval_id)


async def test_rights_are_re_resolved_when_approved(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        await platform.identity.create_role("writer", ["core.exec"])
        await platform.identity.create_user("wes", "writer")
        await platform.admin.grant_source(
            "data", principal_kind="role", principal="writer", rights="rw"
        )
        parked = await platform.call_tool(
            "write_note", {"path": "e.md", "text": "x"}, user="wes", profile="safe"
        )
        await platform.identity.create_role("writer", ["core.web"])  # loses core.exec
        approval_id = parked.data["approval_id"]  # type: ignore[index]
        decided = await platform.decide_approval(approval_id, "approve", user="wes")
        assert decided.status == "pending"  # the call runs after the answer, not inside it
        result = await platform.approval_result(approval_id)
    assert result is not None and result.error_code == "feature_missing"
    assert not (data_dir / "drive" / "e.md").exists()
