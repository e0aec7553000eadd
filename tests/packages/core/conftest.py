"""Fixtures of the connect tests: the demo MCP server's command and a member user."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

MCP_SERVER = [sys.executable, str(FIXTURES / "mcp_demo_server.py")]


@pytest.fixture
def mcp_command() -> list[str]:
    return list(MCP_SERVER)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
