"""`corral workflows` for real: create, change, run, read runs, keys, archive and delete."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.processes import script_model
from tests.cli.test_chat_cli import run


def flat(text: str) -> str:
    """The error as one line (the console wraps it to the terminal's width)."""
    return " ".join(text.split())


def test_workflows_from_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    model = script_model(tmp_path, "wf", {"text": "Digest written."})
    created = run(
        data_dir,
        "workflows", "set", "--title", "Digest", "--instruction", "Write the digest.",
        "--cron", "0 7 * * 1-5", "--timezone", "Europe/Paris", "--model", model,
        "--fields", json.dumps({"webhook": {"body_schema": {"type": "object"}}}),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    workflow_id = created.stdout.split()[-1]
    changed = run(data_dir, "workflows", "set", workflow_id, "--status", "paused")
    assert changed.stdout.strip() == f"{workflow_id}: status"
    shown = run(data_dir, "workflows", "show", workflow_id).stdout
    assert "cron '0 7 * * 1-5' in Europe/Paris" in shown and "paused" in shown
    ran = run(data_dir, "workflows", "run", workflow_id)
    assert ran.returncode == 0, ran.stderr
    snapshot = json.loads(ran.stdout)
    assert (snapshot["status"], snapshot["answer"]) == ("finished", "Digest written.")
    runs = json.loads(run(data_dir, "workflows", "runs", workflow_id, "--json").stdout)
    assert [r["run_id"] for r in runs] == [snapshot["run_id"]]

    [hook] = json.loads(run(data_dir, "workflows", "hooks", workflow_id).stdout)
    issued = run(data_dir, "workflows", "keys", "issue", workflow_id, hook["hook_id"])
    key = issued.stdout.strip().splitlines()[-1]
    assert key.startswith("whk_") and "shown once" in issued.stdout
    [hook] = json.loads(run(data_dir, "workflows", "hooks", workflow_id).stdout)
    assert key not in json.dumps(hook)
    revoked = run(data_dir, "workflows", "keys", "revoke", workflow_id, hook["keys"][0]["key_id"])
    assert revoked.returncode == 0, revoked.stderr

    bad = run(data_dir, "workflows", "set", workflow_id, "--cron", "sometimes")
    assert bad.returncode == 2 and "five-field cron" in flat(bad.stderr)
    refused = run(data_dir, "workflows", "delete", workflow_id, "--yes")
    assert refused.returncode == 2 and "archive it first" in flat(refused.stderr)
    assert run(data_dir, "workflows", "archive", workflow_id).returncode == 0
    assert json.loads(run(data_dir, "workflows", "list", "--json").stdout) == []
    assert run(data_dir, "workflows", "delete", workflow_id, "--yes").returncode == 0
    gone = run(data_dir, "workflows", "show", workflow_id)
    assert gone.returncode == 2 and f"no workflow '{workflow_id}'" in flat(gone.stderr)


def test_sharing_a_workflow_from_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    created = run(
        data_dir,
        "workflows", "set", "--title", "Digest", "--instruction", "Write the digest.",
        "--model", script_model(tmp_path, "wf", {"text": "ok"}),
    )  # fmt: skip
    workflow_id = created.stdout.split()[-1]
    shown = run(data_dir, "workflows", "show", workflow_id).stdout
    assert "Shared with: nobody" in flat(shown)
    shared = run(
        data_dir,
        "workflows", "set", workflow_id,
        "--fields", json.dumps({"shared_with": ["user:max", "role:ops"]}),
    )  # fmt: skip
    assert shared.stdout.strip() == f"{workflow_id}: shared_with", shared.stderr
    shown = flat(run(data_dir, "workflows", "show", workflow_id).stdout)
    assert (
        "Shared with: role:ops, user:max; whoever starts a run, it runs with the owner's" in shown
    )
    bad = run(
        data_dir, "workflows", "set", workflow_id, "--fields", json.dumps({"shared_with": ["max"]})
    )
    assert bad.returncode == 2 and "'max' is not 'user:NAME' or 'role:NAME'" in flat(bad.stderr)
