"""The collector pause around a command's start-up: paused inside, settled (start-up's
objects frozen, collector resumed) once the platform is open, and simply resumed when the
open fails."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from corral.cli._run import collector_paused_for_start_up


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_settling_freezes_start_up_and_resumes_the_collector() -> None:
    gc.enable()
    gc.unfreeze()
    with collector_paused_for_start_up() as settle:
        assert not gc.isenabled()
        built = [[] for _ in range(1_000)]  # what start-up builds, kept for the process
        settle()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)
        settle()  # once is enough; a second call changes nothing
        assert gc.isenabled()
    assert gc.isenabled()


def test_an_open_that_fails_resumes_without_freezing() -> None:
    gc.enable()
    gc.unfreeze()
    with pytest.raises(RuntimeError), collector_paused_for_start_up():
        assert not gc.isenabled()
        raise RuntimeError("the database is unreachable")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with collector_paused_for_start_up() as settle:
        settle()
        assert not gc.isenabled()
    assert not gc.isenabled()
