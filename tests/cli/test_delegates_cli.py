"""`corral delegates` for real: a conversation's delegate runs, one shown, one continued."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.processes import script_model
from tests.cli.test_chat_cli import run


def test_list_show_and_continue_from_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    child = script_model(tmp_path, "child", {"text": "Child answer."}, {"text": "Child again."})
    delegate = {"name": "delegate", "args": {"task": "Dig", "model": child}}
    parent = script_model(tmp_path, "parent", {"tool_calls": [delegate]}, {"text": "Parent done."})
    chat = run(data_dir, "chat", "--model", parent, "--profile", "auto", "--json", "go")
    assert chat.returncode == 0, chat.stderr
    conversation = json.loads(chat.stdout)["conversation_id"]
    listed = run(data_dir, "delegates", "list", conversation, "--json")
    [row] = json.loads(listed.stdout)
    assert (row["status"], row["task"]) == ("finished", "Dig")
    table = run(data_dir, "delegates", "list", conversation).stdout
    assert row["run_id"] in table and "finished" in table
    shown = json.loads(run(data_dir, "delegates", "show", row["run_id"]).stdout)
    assert "Child answer." in shown["answer"]
    continued = run(data_dir, "delegates", "continue", row["run_id"], "once more")
    assert continued.returncode == 0, continued.stderr
    assert "continued as run r_" in continued.stdout
    missing = run(data_dir, "delegates", "show", "r_nope")
    assert missing.returncode == 2 and "no run 'r_nope'" in missing.stderr
