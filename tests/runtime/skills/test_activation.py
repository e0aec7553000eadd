"""Activation through execute in a real run: substitutions, staged credentials, the gate.

The bundle is imported from an agentskills.io-shaped folder, activated by a scripted model,
and its bash script runs for real (in the sandbox) with cwd "${SKILL_DIR}".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral.connect import CredentialStore
from corral.platform import Platform
from corral.runtime.skills import Skills, import_bundle
from tests.runtime.conftest import call
from tests.runtime.recording import Recorder

SECRET = "wk-" + "s3cr3tV4lue" * 3
PLATFORM_SECRET = "pk-" + "N0tF0rY0u" * 3


@pytest.fixture
async def skill_platform(
    data_dir: Path, bundles: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Platform]:
    monkeypatch.setenv("DEMO_API_KEY", PLATFORM_SECRET)
    async with corral.open(data_dir) as platform:
        skills = platform.services.require(Skills)
        for name in ("wiki-notes", "plain-notes"):
            import_bundle(bundles / name, skills.catalog.drive_folder)
        await platform.services.require(CredentialStore).set("wiki", SECRET, user_id="u_owner")
        yield platform


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``needle`` (the database included)."""
    stored = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "corral.db" for p in stored)
    return [p for p in stored if needle.encode() in p.read_bytes()]


def _everything(platform_rows: list[object]) -> str:
    return json.dumps([getattr(r, "data", None) for r in platform_rows], default=str)


async def test_an_imported_bundle_runs_its_script_with_its_credential_only(
    skill_platform: Platform, data_dir: Path
) -> None:
    rt = skill_platform.runtime
    model = Recorder(
        rt,
        "skilled",
        {"tool_calls": [call("execute", action="skill", skill="wiki-notes")]},
        {
            "tool_calls": [
                call("execute", command="bash scripts/probe.sh", cwd="${SKILL_DIR}", reason="probe")
            ]
        },
        {"text": "Probed."},
    )
    turn = await skill_platform.chat("publish", model=model.name, profile="auto")
    assert turn.status == "finished", turn
    first = model.seen[0].system
    assert "<skills>" in first and "- wiki-notes: Publish notes." in first
    assert "Run `bash scripts/probe.sh`" not in first  # bodies stay out until activated
    rows = await skill_platform.rows(turn.conversation_id)
    results = [r.data["result"] for r in rows if r.kind == "tool_result"]
    activated, probed = (r["content"][0]["text"] for r in results)
    drive = (data_dir / "drive" / "skills" / "wiki-notes").resolve()
    assert f"with cwd {drive} (session {turn.conversation_id}, api http://" in activated
    assert "WIKI_TOKEN" in activated and results[0]["data"]["credentials"][0]["staged"]
    assert f"WIKI_TOKEN set len={len(SECRET)}" in probed
    assert "DEMO_API_KEY absent" in probed
    assert "CORRAL_TICKET set len=" in probed
    assert f"skill=wiki-notes cwd={drive}" in probed
    assert f"session={turn.conversation_id}" in probed
    text = _everything(rows)
    assert SECRET not in text and PLATFORM_SECRET not in text
    # Rows, logs, run folders, the database and its WAL: no file holds the value.
    assert files_holding(data_dir, SECRET) == []
