"""Fixtures shared by every test: isolated environment, data folders, an open platform."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
from tests.postgres import database_url, postgres
from tests.sandbox_owner import passable_folder

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
    """The platform's data folder, where the sandbox uid can reach it (see
    :func:`tests.sandbox_owner.passable_folder`)."""
    with passable_folder(tmp_path, "data-parent") as parent:
        yield parent / "data"


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
