"""Activation through execute in real runs: substitutions, staged credentials, the gate.

Bundles are imported from agentskills.io-shaped folders, activated by a scripted model, and
their bash scripts run for real (in the sandbox) with cwd "${SKILL_DIR}".
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import corral
from corral.connect import CredentialStore, Injection
from corral.packages.core.egress_credentials import binding_of
from corral.platform import Platform
from corral.runtime.skills import Skills, import_bundle
from corral.shell.egress.credentials import placeholder
from tests.conftest import DEMO
from tests.runtime.conftest import call
from tests.runtime.recording import Recorder
from tests.runtime.skills.conftest import write_bundle
from tests.sandbox_owner import passable_folder

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "wk-" + "s3cr3tV4lue" * 3
PLATFORM_SECRET = "pk-" + "N0tF0rY0u" * 3
TEAM_SECRET = "tk-" + "Pr0j3ctW1d3" * 3
PROBE = call("execute", command="bash scripts/probe.sh", cwd="${SKILL_DIR}", reason="probe")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def skill_platform(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Platform]:
    with passable_folder(tmp_path_factory.mktemp("skills"), "skills") as root:
        downloads = root / "downloads"
        write_bundle(
            downloads,
            "wiki-notes",
            credentials="credentials:\n  - name: wiki\n    env: WIKI_TOKEN\n",
        )
        write_bundle(downloads, "plain-notes", description="Plain notes, no credentials.")
        demo = Path(shutil.copytree(DEMO, root / "demo"))
        team = "credentials:\n  - name: teamkey\n    env: TEAM_KEY\n"
        write_bundle(
            demo / "skills", "demo-skill", description="Comes with demo.", credentials=team
        )
        write_bundle(downloads, "team-notes", description="Wants the team key.", credentials=team)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DEMO_API_KEY", PLATFORM_SECRET)
            async with corral.open(root / "data", package_paths=[demo]) as platform:
                skills = platform.services.require(Skills)
                for name in ("wiki-notes", "plain-notes", "team-notes"):
                    import_bundle(downloads / name, skills.catalog.drive_folder)
                    # As `corral skills import` does: the operator's import is trusted for all.
                    await skills.trust(name, user_id="", project=True)
                store = platform.services.require(CredentialStore)
                await store.set("wiki", SECRET, user_id="u_owner")
                await store.set("teamkey", TEAM_SECRET, user_id="u_owner", scope="project")
                yield platform


def script(platform: Platform, *turns: Any) -> str:
    """A ``script:`` model (it streams, as a subscribed conversation asks)."""
    folder = platform.settings.data_dir.parent / "scripts"
    folder.mkdir(exist_ok=True)
    path = folder / f"script-{len(list(folder.iterdir()))}.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``needle`` (the database included)."""
    stored = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "corral.db" for p in stored)
    return [p for p in stored if needle.encode() in p.read_bytes()]


async def results(platform: Platform, conversation_id: str) -> list[dict[str, Any]]:
    rows = await platform.rows(conversation_id)
    return [r.data["result"] for r in rows if r.kind == "tool_result"]


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_an_imported_bundle_runs_its_script_with_its_credential_only(
    skill_platform: Platform,
) -> None:
    rt = skill_platform.runtime
    model = script(
        skill_platform,
        {"tool_calls": [call("execute", action="skill", skill="wiki-notes")]},
        {"tool_calls": [PROBE]},
        {"tool_calls": [call("execute", command='echo "leak:$WIKI_TOKEN"', cwd="${SKILL_DIR}")]},
        {"text": "Probed."},
    )
    conversation = await rt.start_conversation(model=model)
    async with rt.events.subscribe(conversation.id) as events:
        turn = await skill_platform.chat("publish", conversation_id=conversation.id, profile="auto")
        frames = []
        while (event := events.get_nowait()) is not None:
            frames.append(event)
    assert turn.status == "finished", turn
    activated, probed, leaked = await results(skill_platform, turn.conversation_id)
    data_dir = skill_platform.settings.data_dir
    drive = (data_dir / "drive" / "skills" / "wiki-notes").resolve()
    assert f"with cwd {drive} (session {turn.conversation_id}, api http://" in text(activated)
    assert "WIKI_TOKEN" in text(activated) and activated["data"]["credentials"][0]["staged"]
    assert f"WIKI_TOKEN set len={len(SECRET)}" in text(probed)
    assert "DEMO_API_KEY absent" in text(probed)
    assert "CORRAL_TICKET set len=" in text(probed)
    assert f"skill=wiki-notes cwd={drive}" in text(probed)
    assert f"session={turn.conversation_id}" in text(probed)
    # Even a command that prints the value shows it to nobody.
    assert "leak:" in text(leaked) and SECRET not in text(leaked)
    live = json.dumps([f for f in frames if f["type"] == "output"])
    assert "leak:" in live and "WIKI_TOKEN set" in live and SECRET not in live
    rows = await skill_platform.rows(turn.conversation_id)
    shown = json.dumps([r.data for r in rows], default=str)
    assert SECRET not in shown and PLATFORM_SECRET not in shown
    # Rows, logs, run folders, the database and its WAL: no file holds the value.
    assert files_holding(data_dir, SECRET) == []


async def test_two_active_skills_and_the_skill_input_choosing_the_binding(
    skill_platform: Platform,
) -> None:
    rt = skill_platform.runtime
    model = Recorder(
        rt,
        "two-skills",
        {
            "tool_calls": [
                call("execute", action="skill", skill="wiki-notes"),
            ]
        },
        {"tool_calls": [call("execute", action="skill", skill="plain-notes")]},
        {"tool_calls": [PROBE]},
        {"tool_calls": [{**PROBE, "args": {**PROBE["args"], "skill": "wiki-notes"}}]},
        {"tool_calls": [{**PROBE, "args": {**PROBE["args"], "skill": "nope"}}]},
        {"text": "Done."},
    )
    turn = await skill_platform.chat("both", model=model.name, profile="auto")
    assert turn.status == "finished", turn
    first = model.seen[0].system
    assert "<skills>" in first and "- wiki-notes: Publish notes." in first
    assert "Run `bash scripts/probe.sh`" not in first  # bodies stay out until activated
    _, second, latest, chosen, unknown = await results(skill_platform, turn.conversation_id)
    assert second["data"]["active"] == ["wiki-notes", "plain-notes"]
    assert "skill=plain-notes" in text(latest) and "WIKI_TOKEN absent" in text(latest)
    assert "skill=wiki-notes" in text(chosen) and "WIKI_TOKEN set" in text(chosen)
    assert unknown["error_code"] == "skill_not_active"
    assert "'nope' is not active in this run (active: wiki-notes, plain-notes)" in text(unknown)


async def test_a_package_skill_folder_is_read_and_exec_only(skill_platform: Platform) -> None:
    rt = skill_platform.runtime
    in_skill = {"cwd": "${SKILL_DIR}", "skill": "execute"}
    model = Recorder(
        rt,
        "builtin",
        {"tool_calls": [call("execute", action="skill", skill="execute")]},
        {"tool_calls": [call("execute", command="head -n 2 SKILL.md", **in_skill)]},
        {"tool_calls": [call("execute", command="touch planted.sh", **in_skill)]},
        {"tool_calls": [call("execute", command="echo x > scripts/api.sh", **in_skill)]},
        {"text": "Done."},
    )
    turn = await skill_platform.chat("look", model=model.name, profile="auto")
    assert turn.status == "finished", turn
    activated, read, touched, redirected = await results(skill_platform, turn.conversation_id)
    folder = Path(activated["data"]["skill_dir"])
    assert activated["data"]["origin"] == "package" and folder.name == "execute"
    assert "name: execute" in text(read) and read["status"] == "ok"
    for refused in (touched, redirected):
        assert refused["error_code"] == "policy_denied", refused
        assert "write access" in text(refused) and "skill.execute" in text(refused)
    assert not (folder / "planted.sh").exists()
    assert (folder / "scripts" / "api.sh").read_text().startswith("# Sourced")


async def test_skill_dir_without_an_active_skill_is_refused(skill_platform: Platform) -> None:
    turn = await skill_platform.chat(
        "x",
        model=Recorder(
            skill_platform.runtime, "none-active", {"tool_calls": [PROBE]}, {"text": "No."}
        ).name,
        profile="auto",
    )
    [refused] = await results(skill_platform, turn.conversation_id)
    assert refused["error_code"] == "policy_denied"
    assert "uses a substitution, but no skill is active" in text(refused)


async def test_a_disabled_package_takes_its_skills_away(skill_platform: Platform) -> None:
    skills = skill_platform.services.require(Skills)
    assert "demo-skill" in (await skills.available(viewer=None)).skills
    await skill_platform.admin.set_package_enabled("demo", False)
    try:
        model = Recorder(
            skill_platform.runtime,
            "disabled",
            {"tool_calls": [call("execute", action="skill", skill="demo-skill")]},
            {"text": "Gone."},
        )
        turn = await skill_platform.chat("x", model=model.name, profile="auto")
        assert "demo-skill" not in model.seen[0].system and "wiki-notes" in model.seen[0].system
        [refused] = await results(skill_platform, turn.conversation_id)
        assert refused["error_code"] == "unknown_skill"
    finally:
        await skill_platform.admin.set_package_enabled("demo", True)


async def test_project_credentials_reach_only_skills_an_operator_installed(
    skill_platform: Platform,
) -> None:
    model = script(
        skill_platform,
        {"tool_calls": [call("execute", action="skill", skill="team-notes")]},
        {"tool_calls": [call("execute", action="skill", skill="demo-skill")]},
        {"text": "Done."},
    )
    turn = await skill_platform.chat("team", model=model, profile="auto")
    drive_skill, package_skill = await results(skill_platform, turn.conversation_id)
    assert drive_skill["data"]["credentials"] == [
        {"name": "teamkey", "env": "TEAM_KEY", "staged": False}
    ]
    assert "receives only the user's own credentials" in text(drive_skill)
    assert package_skill["data"]["credentials"][0]["staged"] is True
    assert TEAM_SECRET not in json.dumps([text(drive_skill), text(package_skill)])


async def test_allowed_tools_narrow_the_run_while_the_skill_is_active(
    skill_platform: Platform, tmp_path: Path
) -> None:
    skills = skill_platform.services.require(Skills)
    folder = write_bundle(tmp_path, "narrow-notes", description="Only shell and todos.")
    skill_md = folder / "SKILL.md"
    # Claude Code's spelling: a string with argument patterns, its tool names.
    skill_md.write_text(
        skill_md.read_text().replace(
            "description:", 'allowed-tools: "Bash(bash scripts/*:*), TodoWrite"\ndescription:', 1
        )
    )
    import_bundle(folder, skills.catalog.drive_folder)
    await skills.trust("narrow-notes", user_id="", project=True)
    model = Recorder(
        skill_platform.runtime,
        "narrowed",
        {"tool_calls": [call("execute", action="skill", skill="narrow-notes")]},
        {"tool_calls": [call("echo", text="past the skill")]},
        {"tool_calls": [PROBE]},
        {"text": "Done."},
    )
    turn = await skill_platform.chat("narrow", model=model.name, profile="auto")
    assert turn.status == "finished", turn
    before, after = set(model.seen[0].tools), set(model.seen[1].tools)
    assert {"echo", "execute", "todos"} <= before
    assert after == {"execute", "todos"}
    activated, echoed, probed = await results(skill_platform, turn.conversation_id)
    assert activated["data"]["allowed_tools"] == ["Bash(bash scripts/*:*)", "TodoWrite"]
    assert echoed["status"] == "error" and echoed["error_code"] == "not_visible", echoed
    assert probed["status"] == "ok" and "skill=narrow-notes" in text(probed)
    # The next run starts with no skill active: its tools are whole again.
    again = Recorder(skill_platform.runtime, "whole-again", {"text": "Hi."})
    await skill_platform.chat("hi", model=again.name, profile="auto")
    assert "echo" in again.seen[0].tools


async def test_a_credential_the_proxy_injects_reaches_the_skill_as_its_placeholder(
    skill_platform: Platform,
) -> None:
    store = skill_platform.services.require(CredentialStore)
    forge = Injection(hosts=("wiki.example",), inject_as="header")
    await store.set("wiki", SECRET, user_id="u_owner", injection=forge)
    try:
        (credential,) = [c for c in await store.injected(user_id="u_owner") if c.name == "wiki"]
        stand_in = placeholder(binding_of(credential))
        digest = 'printf %s "$WIKI_TOKEN" | sha256sum'
        model = script(
            skill_platform,
            {"tool_calls": [call("execute", action="skill", skill="wiki-notes")]},
            {"tool_calls": [call("execute", command=digest, cwd="${SKILL_DIR}")]},
            {"text": "Done."},
        )
        turn = await skill_platform.chat("go", model=model, profile="auto")
        assert turn.status == "finished", turn
        _, hashed = await results(skill_platform, turn.conversation_id)
        assert hashlib.sha256(stand_in.encode()).hexdigest() in text(hashed), text(hashed)
        assert hashlib.sha256(SECRET.encode()).hexdigest() not in text(hashed)
    finally:
        await store.remove("wiki", user_id="u_owner")
        await store.set("wiki", SECRET, user_id="u_owner")
