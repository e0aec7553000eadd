"""Table models that load with their first use (issue 39, item 3): a process that opened the
platform without them still remembers rules, issues run tickets, stores spans, keeps
workflows and lists conversations, each loading its models then (a fresh interpreter, so
no other test has loaded them before)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LATE = (
    "corral.store.rule_tables",
    "corral.store.skill_tables",
    "corral.store.trace_tables",
    "corral.store.workflow_tables",
    "corral.store.delegation_tables",
    "corral.runtime.workflows",
)

PREPARE = """
import asyncio, sys
import corral

async def main(folder):
    async with corral.open(folder) as platform:  # migrated: every table is there
        info = await platform.runtime.start_conversation(title="late")
    print(info.id)

asyncio.run(main(sys.argv[1]))
"""

SCRIPT = """
import asyncio, json, sys
import corral

LATE = json.loads(sys.argv[2])

async def main(folder):
    async with corral.open(folder) as platform:
        loaded_at_open = [m for m in LATE if m in sys.modules]
        kernel, owner = platform.kernel, await platform.caller()
        remembered = await kernel.command_rules.remembered.remember(
            ["make", "test"], decision="allow", scope="user", user_id=owner.user_id,
            agent=None, created_by=owner.user_id,
        )
        rules = await kernel.command_rules.remembered.listing()
        live = await kernel.identity.tickets.live_for("no-run")
        spans = await kernel.traces.spans("no-trace")
        pruned = await kernel.traces.prune()
        workflow = await platform.workflows.set(
            {"title": "Daily", "instruction": "Report."}, owner
        )
        listed = await platform.runtime.conversations.list_conversations()
    print(json.dumps({
        "loaded_at_open": loaded_at_open,
        "added": remembered.added,
        "rules": [list(r.pattern) for r in rules],
        "live": live,
        "spans": len(spans),
        "pruned": pruned,
        "workflow": workflow.title,
        "listed": [c.id for c in listed],
        "loaded_after": [m for m in LATE if m in sys.modules],
    }))

asyncio.run(main(sys.argv[1]))
"""


def test_late_tables_work_when_first_used(tmp_path: Path) -> None:
    prepared = subprocess.run(
        [sys.executable, "-c", PREPARE, str(tmp_path / "data")], capture_output=True, text=True
    )
    assert prepared.returncode == 0, prepared.stderr
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), json.dumps(LATE)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["loaded_at_open"] == []
    assert seen["added"] is True and seen["rules"] == [["make", "test"]]
    assert (seen["live"], seen["spans"], seen["pruned"]) == (0, 0, 0)
    assert seen["workflow"] == "Daily"
    assert seen["listed"] == [prepared.stdout.strip()]
    assert seen["loaded_after"] == list(LATE)
