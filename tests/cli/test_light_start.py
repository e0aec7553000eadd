"""`corral --help` loads neither the platform nor its database and model libraries."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "corral.platform",
    "corral.runtime",
    "corral.shell",
    "corral.web",
    "corral.server",
    "corral.store",
    "sqlalchemy",
    "pydantic_ai",
    "uvicorn",
)

HELP = """
import json, runpy, sys
sys.argv = ["corral", "--help"]
try:
    runpy.run_module("corral", run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def heavy_among(modules: list[str]) -> list[str]:
    return [m for m in modules if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY))]


def test_help_does_not_import_the_platform() -> None:
    done = subprocess.run([sys.executable, "-c", HELP], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout and "conversations" in done.stdout
    loaded = json.loads(done.stderr.splitlines()[-1])
    assert "corral.cli.main" in loaded and "corral.cli.shells" in loaded
    assert heavy_among(loaded) == []
