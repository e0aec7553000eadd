"""Start-up stays light: `corral --help` loads neither the platform nor its database and model
libraries, and opening the platform loads the MCP SDK only once a server is in use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


OPEN = """
import asyncio, json, sys
import corral

async def main(folder):
    async with corral.open(folder) as platform:
        assert platform.runtime is not None

asyncio.run(main(sys.argv[1]))
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_opening_the_platform_without_mcp_servers_leaves_the_mcp_sdk_unloaded(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", OPEN, str(tmp_path / "data")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stderr.splitlines()[-1])
    assert "corral.packages.core.mcp_servers" in loaded
    assert [m for m in loaded if m == "mcp" or m.startswith("mcp.")] == []
