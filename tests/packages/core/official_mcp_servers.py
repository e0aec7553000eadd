"""Where scripts/mcp-test-servers put the six official reference MCP servers, and their
commands; a test skips, saying what to run, when they are not there."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

INSTALLED = Path(__file__).resolve().parents[3] / ".mcp-servers"
NODE_PACKAGES = INSTALLED / "node" / "node_modules" / "@modelcontextprotocol"
INSTALL_HINT = "run scripts/mcp-test-servers (scripts/setup --test runs it)"


def _reachable_by_everyone(path: Path) -> bool:
    """Whether a uid with no rights of its own (the sandbox uid) can reach ``path``."""
    for folder in path.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


def _present(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"SKIPPED LOUDLY: {what} is not installed at {path}; {INSTALL_HINT}")
    if os.geteuid() == 0 and not _reachable_by_everyone(path):
        pytest.skip(
            f"SKIPPED LOUDLY: {path} is out of the sandbox uid's reach (a 0700 folder above "
            "it); MCP servers run as that uid: install the repository where every user may "
            "pass"
        )
    return path


def python_server(program: str) -> list[str]:
    """The command of a PyPI server installed in .mcp-servers/python."""
    return [str(_present(INSTALLED / "python" / "bin" / program, program))]


def node_server(package: str) -> list[str]:
    """The command of an npm server installed in .mcp-servers/node."""
    node = shutil.which("node")
    if node is None:
        pytest.skip(f"SKIPPED LOUDLY: node is not installed, so {package} cannot be tested")
    script = _present(
        NODE_PACKAGES / package / "dist" / "index.js", f"@modelcontextprotocol/{package}"
    )
    return [os.path.realpath(node), str(script)]
