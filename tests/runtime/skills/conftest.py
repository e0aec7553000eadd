"""Fixtures of the skills tests: an agentskills.io-shaped bundle with a bash script."""

from __future__ import annotations

from pathlib import Path

import pytest

PROBE = """\
#!/usr/bin/env bash
# Says whether each variable is set and how long it is; never its value.
for name in WIKI_TOKEN DEMO_API_KEY CORRAL_TICKET; do
  value="${!name}"
  if [ -n "$value" ]; then echo "$name set len=${#value}"; else echo "$name absent"; fi
done
echo "skill=$SKILL_NAME cwd=$(pwd)"
echo "session=$SESSION_ID"
"""


def write_bundle(
    root: Path, name: str, *, description: str = "Publish notes.", credentials: str = ""
) -> Path:
    """A bundle folder ``root/name`` with SKILL.md and ``scripts/probe.sh``."""
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{credentials}---\n"
        f"# {name}\nRun `bash scripts/probe.sh` with cwd ${{SKILL_DIR}} "
        "(session ${SESSION_ID}, api ${CORRAL_API}).\n"
    )
    (folder / "scripts" / "probe.sh").write_text(PROBE)
    return folder


@pytest.fixture
def bundles(tmp_path: Path) -> Path:
    """A folder of two bundles, ``wiki-notes`` (declares ``wiki`` as WIKI_TOKEN) and
    ``plain-notes`` (declares nothing)."""
    root = tmp_path / "downloads"
    write_bundle(
        root, "wiki-notes", credentials="credentials:\n  - name: wiki\n    env: WIKI_TOKEN\n"
    )
    write_bundle(root, "plain-notes", description="Plain notes, no credentials.")
    return root
