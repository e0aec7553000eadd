"""`corral inbox`: every pending decision of the person, from a real CLI process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import DEMO


def corral_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir), "CORRAL_PACKAGE_PATH": str(DEMO)}
    return subprocess.run(
        [sys.executable, "-m", "corral", *args], capture_output=True, text=True, env=env
    )


def test_the_inbox_lists_pending_decisions_and_drops_the_answered(data_dir: Path) -> None:
    empty = corral_cli(data_dir, "inbox")
    assert empty.returncode == 0, empty.stderr
    assert "nothing waits for you" in empty.stdout
    parked = corral_cli(
        data_dir,
        "tools",
        "call",
        "write_note",
        json.dumps({"path": "data://i.md", "text": "hi"}),
        "--profile",
        "balanced",
        "--json",
    )
    approval_id = json.loads(parked.stdout)["data"]["approval_id"]
    listed = corral_cli(data_dir, "inbox", "--json")
    assert listed.returncode == 0, listed.stderr
    [pending] = json.loads(listed.stdout)
    assert (pending["id"], pending["kind"], pending["status"]) == (
        approval_id,
        "approval",
        "pending",
    )
    shown = corral_cli(data_dir, "inbox")
    assert approval_id in shown.stdout and "write_note" in shown.stdout
    denied = corral_cli(data_dir, "approvals", "decide", approval_id, "deny")
    assert denied.returncode == 0, denied.stderr
    assert json.loads(corral_cli(data_dir, "inbox", "--json").stdout) == []
    [done] = json.loads(corral_cli(data_dir, "inbox", "--all", "--json").stdout)
    assert (done["status"], done["surface"], done["answer"]) == (
        "decided",
        "cli",
        {"decision": "deny"},
    )
