"""Benches that start corral processes measure the checkout they live in.

A virtual environment's ``corral`` is an editable install of one checkout; run from another
checkout (a worktree), a bench would import that one and start workers from it, measuring
code other than the one beside it. :func:`this_checkout` starts the bench again on its own
sources when the imported ``corral`` is not theirs; :func:`child_env` gives the processes it
starts the same sources.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import corral

__all__ = ["SOURCES", "child_env", "this_checkout"]

SOURCES = Path(__file__).resolve().parents[1] / "src"


def child_env() -> dict[str, str]:
    """The environment of a corral process a bench starts: this checkout's sources first, and
    no ``CORRAL_*`` setting of the shell (the bench's data folder says every one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SOURCES), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    return env


def this_checkout() -> None:
    """Start this bench again on this checkout's sources unless ``corral`` is already theirs."""
    if Path(corral.__file__).resolve().parent.parent == SOURCES:
        return
    print(f"using {SOURCES} (the environment's corral is {corral.__file__})", file=sys.stderr)
    os.execve(sys.executable, [sys.executable, *sys.argv], child_env())
