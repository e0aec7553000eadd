"""`corral skills` in real processes: import validates then copies into the drive; list shows
every skill with the bundles left out and why; show prints one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.processes import corral_cli
from tests.runtime.skills.conftest import write_bundle
from tests.runtime.skills.test_claude_code_bundles import ANTHROPIC


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, "skills", *args, env={"COLUMNS": "400"})


def flat(text: str) -> str:
    """Console output without the line wrapping of a narrow terminal."""
    return " ".join(text.split())


def test_import_list_and_show(data_dir: Path, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "download", "wiki-notes")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\ndescription: [x\n---\n")
    refused = run(data_dir, "import", str(broken))
    assert refused.returncode != 0 and "front matter is not valid YAML" in flat(refused.stderr)
    done = run(data_dir, "import", str(bundle))
    assert done.returncode == 0, done.stderr
    assert "imported skill 'wiki-notes' into data://skills/wiki-notes/" in flat(done.stdout)
    # A bundle dropped into the drive by hand with a bad field is listed as left out.
    hand = data_dir / "drive" / "skills" / "hand-made"
    hand.mkdir()
    (hand / "SKILL.md").write_text("---\nname: hand-made\ndescription: ''\n---\n")
    table = flat(run(data_dir, "list").stdout)
    assert "│ wiki-notes │ drive │ - │ Publish notes. │" in table
    for name in ("execute", "delegate", "manage-agents", "manage-conversations"):
        assert f"│ {name} " in table and "package core" in table
    assert "hand-made/SKILL.md (field 'description'): is required" in table
    shown = json.loads(run(data_dir, "show", "wiki-notes").stdout)
    assert shown["body"].startswith("# wiki-notes") and shown["folder"].endswith("wiki-notes")


def test_an_over_long_description_imports_with_a_warning(data_dir: Path) -> None:
    bundle = ANTHROPIC / "claude-api"
    done = run(data_dir, "import", str(bundle))
    assert done.returncode == 0, done.stderr
    said = flat(done.stdout)
    assert "imported skill 'claude-api'" in said and "over the format's 1024" in said
    listed = flat(run(data_dir, "list").stdout)
    assert "warning" in listed and "claude-api/SKILL.md" in listed
    shown = json.loads(run(data_dir, "show", "claude-api").stdout)
    assert shown["other_fields"] == {"license": "Complete terms in LICENSE.txt"}
    assert len(shown["warnings"]) == 1
