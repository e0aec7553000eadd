"""Fixtures shared by every test: isolated environment, data folders, an open platform."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral.platform import Platform

FIXTURES = Path(__file__).parent / "fixtures"
PACKAGES = FIXTURES / "packages"
DEMO = PACKAGES / "demo"
BROKEN = PACKAGES / "broken"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CORRAL_"):
            monkeypatch.delenv(name)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def platform(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, package_paths=[DEMO]) as opened:
        yield opened
