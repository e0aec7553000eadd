"""`corral chat`, `corral conversations`, `corral runs`, `corral agents set` in real processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.processes import corral_cli, script_model


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, *args, demo=True)


def test_chat_streams_the_turn_and_continues_a_conversation(data_dir: Path, tmp_path: Path) -> None:
    model = script_model(
        tmp_path,
        "chat",
        {"text": "Let me echo.", "tool_calls": [{"name": "echo", "args": {"text": "hi"}}]},
        {"text": "It said hi."},
        {"when_message_contains": "again", "text": "Hello again."},
    )
    first = run(data_dir, "chat", "--model", model, "say hi")
    assert first.returncode == 0, first.stderr
    out = first.stdout
    assert "Let me echo." in out and "╭ echo" in out and "✓ echo: hi" in out
    assert "It said hi." in out and "finished · 2 steps" in out
    cid = out.split("conversation ")[1].split()[0]
    again = run(data_dir, "chat", "--conversation", cid, "--json", "again")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["text"] == "Hello again."
    listed = json.loads(run(data_dir, "conversations", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cid]
    shown = run(data_dir, "conversations", "show", cid)
    assert "you: say hi" in shown.stdout and "— run finished" in shown.stdout
    runs = json.loads(run(data_dir, "runs", "list", "--json").stdout)
    assert [r["status"] for r in runs] == ["finished", "finished"]


def test_chat_exit_codes_and_mistakes(data_dir: Path, tmp_path: Path) -> None:
    parks = script_model(
        tmp_path,
        "parks",
        {"tool_calls": [{"name": "write_note", "args": {"path": "a", "text": "b"}}]},
    )
    parked = run(data_dir, "chat", "--model", parks, "write")
    assert parked.returncode == 3
    assert "corral approvals decide ap_" in parked.stdout
    no_model = run(data_dir, "chat", "hello")
    assert no_model.returncode == 2 and "no model for agent 'default'" in no_model.stderr
    bad_profile = run(data_dir, "chat", "--model", parks, "--profile", "yolo", "x")
    assert bad_profile.returncode == 2 and "unknown permission profile" in bad_profile.stderr


def test_agents_set_and_the_inbox(data_dir: Path, tmp_path: Path) -> None:
    model = script_model(tmp_path, "helper", {"text": "ready"}, {"text": "got your note"})
    created = run(data_dir, "agents", "set", "helper", "--instructions", "Help.", "--model", model)
    assert created.returncode == 0, created.stderr
    agents = json.loads(run(data_dir, "agents", "list", "--json").stdout)
    assert {"name": "helper", "model": model}.items() <= next(
        a for a in agents if a["name"] == "helper"
    ).items()
    first = json.loads(run(data_dir, "chat", "--agent", "helper", "--json", "hi").stdout)
    assert first["text"] == "ready"
    sent = run(data_dir, "conversations", "send", first["conversation_id"], "a note for you")
    assert sent.returncode == 0, sent.stderr
    assert "got your note" in sent.stdout  # the conversation continued by itself
    shown = json.loads(
        run(data_dir, "conversations", "show", first["conversation_id"], "--json").stdout
    )
    message = next(r for r in shown["rows"] if r["kind"] == "message")
    assert message["data"]["text"] == "a note for you" and message["data"]["hop"] == 1
