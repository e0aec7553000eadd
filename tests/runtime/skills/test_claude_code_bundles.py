"""Bundles as people already have them: anthropics/skills and Claude Code's ``.claude/skills``."""

from __future__ import annotations

import shutil
from pathlib import Path

from corral.runtime.skills.allowed_tools import narrowing_of, tool_names
from corral.runtime.skills.bundle import SkillBundle, parse_skill
from corral.runtime.skills.catalog import SkillCatalog
from corral.runtime.skills.prompt_block import render_skills

ANTHROPIC = Path(__file__).parent / "fixtures" / "anthropic_skills"


def catalog(*folders: Path, drive: Path) -> SkillCatalog:
    return SkillCatalog(packages={}, drive_dir=drive, folders=folders)


def test_the_public_bundles_load_and_an_over_long_description_is_a_warning(
    tmp_path: Path,
) -> None:
    found = catalog(ANTHROPIC, drive=tmp_path).load()
    assert sorted(found.skills) == ["brand-guidelines", "claude-api"]
    assert found.errors == ()
    api = found.skills["claude-api"]
    assert len(api.description) > 1_024
    [warning] = api.warnings
    assert "over the format's 1024" in warning
    assert api.other_fields == {"license": "Complete terms in LICENSE.txt"}
    assert found.skills["brand-guidelines"].warnings == ()
    block = render_skills({n: b.description for n, b in found.skills.items()}, 4_000)
    assert block is not None
    [listed] = [line for line in block.splitlines() if line.startswith("- claude-api:")]
    assert len(listed) < 250 and listed.endswith("…")


def test_unknown_front_matter_is_kept_and_a_missing_name_is_the_folders(tmp_path: Path) -> None:
    folder = tmp_path / "release-notes"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\n"
        "description: Write the release notes.\n"
        "license: MIT\n"
        "compatibility: Needs git and network access\n"
        "metadata:\n  author: team\n  version: '1.2'\n"
        "disable-model-invocation: false\n"
        'allowed-tools: "Bash(git log:*), Read Grep, mcp__github__list_prs"\n'
        "---\nBody.\n"
    )
    bundle = parse_skill(folder, origin="folder")
    assert isinstance(bundle, SkillBundle), bundle
    assert bundle.name == "release-notes"
    assert bundle.other_fields == {
        "license": "MIT",
        "compatibility": "Needs git and network access",
        "metadata": {"author": "team", "version": "1.2"},
        "disable-model-invocation": False,
    }
    assert bundle.allowed_tools == ("Bash(git log:*)", "Read", "Grep", "mcp__github__list_prs")
    assert tool_names(bundle.allowed_tools) == {
        "execute",
        "fs_read",
        "fs_search",
        "mcp__github__list_prs",
    }


def test_two_skills_narrow_in_turn_and_one_without_allowed_tools_narrows_nothing() -> None:
    assert narrowing_of([(), ()]).tools is None
    both = narrowing_of([("Read", "WebFetch"), ("Read", "Grep"), ()])
    assert both.tools == {"execute", "fs_read"}


def test_skill_paths_take_a_claude_code_folder_as_it_is(tmp_path: Path) -> None:
    project = tmp_path / "project"
    skills = project / ".claude" / "skills"
    shutil.copytree(ANTHROPIC / "brand-guidelines", skills / "brand-guidelines")
    # ~/.claude/skills often links bundles kept elsewhere.
    shutil.copytree(ANTHROPIC / "claude-api", tmp_path / "elsewhere" / "claude-api")
    (skills / "claude-api").symlink_to(tmp_path / "elsewhere" / "claude-api")
    for pointed in (project, project / ".claude", skills):
        found = catalog(pointed, drive=tmp_path / "drive").load()
        assert sorted(found.skills) == ["brand-guidelines", "claude-api"], pointed
        assert found.errors == ()
        linked = found.skills["claude-api"]
        assert linked.folder == (tmp_path / "elsewhere" / "claude-api").resolve()


def test_the_drive_still_refuses_a_linked_bundle(tmp_path: Path) -> None:
    drive_skills = tmp_path / "drive" / "skills"
    drive_skills.mkdir(parents=True)
    (drive_skills / "brand-guidelines").symlink_to(ANTHROPIC / "brand-guidelines")
    found = catalog(drive=tmp_path / "drive").load()
    assert found.skills == {}
    assert ["symbolic link" in e.message for e in found.errors] == [True]
