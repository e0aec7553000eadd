"""Fixtures shared by every test: isolated environment, data folders, an open platform."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
from tests.postgres import database_url, postgres

__all__ = ["database_url", "postgres"]  # PostgreSQL fixtures, for every test folder

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
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """The platform's data folder: under ``tmp_path``, or as root in a folder of its own
    that every user may pass through (never list).

    As root, sandboxed commands run as the sandbox uid and bubblewrap resolves each bind
    source (the drive, the sandbox's /etc) as that uid, which cannot enter pytest's 0700
    tree (and pytest narrows that tree again whenever any session starts)."""
    if os.geteuid() != 0:
        yield tmp_path / "data"
        return
    root = Path(tempfile.mkdtemp(prefix="corral-test-", dir="/tmp"))
    root.chmod(0o711)
    try:
        yield root / "data"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def platform(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, package_paths=[DEMO]) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail any test that would reach a real model: tests use scripted or registered models."""
    import pydantic_ai.models

    from corral.runtime.models import providers

    attempts: list[str] = []

    def refuse(spec: str) -> None:
        attempts.append(spec)
        raise RuntimeError(f"tests must not reach a real model ({spec!r}); use script:PATH")

    monkeypatch.setattr(providers, "REAL_MODEL_GUARD", refuse)
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", False)
    yield attempts
    if attempts:
        pytest.fail(f"the test tried to reach a real model: {', '.join(attempts)}")
