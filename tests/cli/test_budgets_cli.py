"""`corral conversations budget` and `corral runs show` for real: an owner sets limits, a
bad value is refused with the reason, the run shows spent against limit."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.processes import script_model
from tests.cli.test_chat_cli import run


def test_set_a_budget_run_against_it_and_show_spent_and_limit(
    data_dir: Path, tmp_path: Path
) -> None:
    first = run(
        data_dir, "chat", "--model", script_model(tmp_path, "hi", {"text": "Hi."}), "--json", "hi"
    )
    model = script_model(
        tmp_path,
        "budgeted",
        {"text": "(the first turn, answered above)"},
        {"tool_calls": [{"name": "echo", "args": {"text": "hi"}}]},
        {"tool_calls": [{"name": "echo", "args": {"text": "again"}}]},
        {"text": "Wrapped up."},
    )
    assert first.returncode == 0, first.stderr
    conversation = json.loads(first.stdout)["conversation_id"]
    bad = run(data_dir, "conversations", "budget", conversation, '{"request": 1}')
    assert bad.returncode == 2 and "no limit called 'request'" in bad.stderr, bad.stderr
    not_json = run(data_dir, "conversations", "budget", conversation, "{requests: 1}")
    assert not_json.returncode == 2 and "the limits are not JSON" in not_json.stderr
    limits = {"requests": 2, "per_tool": {"echo": 5}}
    done = run(data_dir, "conversations", "budget", conversation, json.dumps(limits))
    assert done.returncode == 0 and json.loads(done.stdout) == limits, done.stderr
    shown = run(data_dir, "conversations", "budget", conversation)
    assert json.loads(shown.stdout) == limits
    turn = run(data_dir, "chat", "-c", conversation, "--model", model, "--json", "go")
    assert turn.returncode == 1, turn.stderr  # a partial run exits 1
    run_id = json.loads(turn.stdout)["run_id"]
    record = json.loads(run(data_dir, "runs", "show", run_id).stdout)
    assert (record["status"], record["reason"]) == ("partial", "budget_exhausted")
    assert record["budget"]["limits"]["requests"] == {"spent": 3, "limit": 2}  # and wrap-up
    assert record["budget"]["limits"]["per_tool.echo"] == {"spent": 1, "limit": 5}
    timeline = run(data_dir, "conversations", "show", conversation).stdout
    assert "run partial (budget_exhausted) · budget requests 3/2" in timeline, timeline
