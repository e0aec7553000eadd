"""Fixtures of the connect tests: the demo MCP server's command and a member user."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES


def server_python() -> str:
    """A Python with the MCP SDK that the sandbox uid may run.

    As root, MCP servers run as the sandbox uid, and this interpreter often sits in root's
    0700 home (pyenv): a wrapper in /tmp runs the system Python of the same version on the
    test venv's packages (readable by all). Not as root, ``sys.executable``."""
    if os.geteuid() != 0:
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        pytest.skip(f"no system {version} the sandbox uid can run the MCP test server with")
    folder = Path(tempfile.mkdtemp(prefix="corral-mcp-python-", dir="/tmp"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    wrapper = folder / "python"
    packages = sysconfig.get_paths()["purelib"]
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={packages} exec {system} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


MCP_SERVER = [server_python(), str(FIXTURES / "mcp_demo_server.py")]
MCP_FEATURES_SERVER = [MCP_SERVER[0], str(FIXTURES / "mcp_features_server.py")]


@pytest.fixture
def mcp_command() -> list[str]:
    return list(MCP_SERVER)


@pytest.fixture
def features_command() -> list[str]:
    return list(MCP_FEATURES_SERVER)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
