"""An analysis leaves no reference cycles behind: its objects are freed as soon as the
verdict is returned, not by the cyclic garbage collector, whose passes they would trigger
and lengthen on a busy gate (the walk's sinks, frames and function tables point at each
other while it runs)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from corral.shell.analysis._analyze import _analyze

HOME = "/home/agent"
CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db",)

CASES = [
    ("ls -la src && grep -rn TODO src | sort > notes.txt", False, None),
    ("cat /srv/corral/data/corral.db", False, "protected_path"),
    ('f() { echo "$1"; }; f a; f b; g() { ls; }; g', False, None),
    ("bash -c 'cd docs && make html' || echo failed", False, None),
    ("sudo ls", False, "blocked_binary"),
    ("./run_tests.sh", True, "unreadable_code"),
    ("echo " + "$(" * 300 + "x" + ")" * 300, False, "too_large"),
]


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize(("command", "unconfined", "rule"), CASES)
def test_an_analysis_leaves_no_cycles(
    saved_garbage: list[object], command: str, unconfined: bool, rule: str | None
) -> None:
    result = _analyze(command, PROTECTED, HOME, CWD, unconfined)
    assert result.rule == rule
    del result
    gc.collect()
    assert [type(o).__name__ for o in saved_garbage] == []
