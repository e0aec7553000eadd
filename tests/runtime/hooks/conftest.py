"""Fixtures of the hook tests: a project folder the sandbox uid may enter, an engine on a file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from corral.runtime.hooks import HookRunner, Hooks

SCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "hooks"

MakeHooks = Callable[..., Hooks]


@pytest.fixture
def project_dir() -> Iterator[Path]:
    """A folder the hook may use as its working folder: as root hooks run as uid 65534,
    which cannot enter pytest's 0700 tree."""
    root = Path(tempfile.mkdtemp(prefix="corral-hooks-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def make_hooks(project_dir: Path) -> MakeHooks:
    """An engine reading ``hooks.json`` written from the given object (or none)."""

    def make(config: dict[str, Any] | None = None) -> Hooks:
        file = project_dir / "hooks.json"
        if config is not None:
            file.write_text(json.dumps(config), encoding="utf-8")
        hooks = Hooks(
            HookRunner(project_dir=project_dir, sandbox_uid=65534), file=file, file_recheck_s=0
        )
        hooks.load()
        return hooks

    return make


def script(name: str) -> str:
    """The command line of a fixture script (readable and executable by every uid)."""
    path = SCRIPTS / name
    assert os.access(path, os.X_OK) and path.stat().st_mode & 0o005 == 0o005, path
    return str(path)


def pre_tool_use(matcher: str, *commands: str, **options: Any) -> dict[str, Any]:
    return {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": matcher,
                    "hooks": [{"type": "command", "command": c, **options} for c in commands],
                }
            ]
        }
    }
