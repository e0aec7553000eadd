"""Running the real `corral` command in a subprocess, and scripted models for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import DEMO


def corral_cli(
    data_dir: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    stdin: str | None = None,
    demo: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m corral ARGS`` on ``data_dir``, with the inherited environment changed by
    ``env`` (a None value removes a variable) and the demo package on the path when asked."""
    merged: dict[str, str | None] = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
    if demo:
        merged["CORRAL_PACKAGE_PATH"] = str(DEMO)
    merged.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "corral", *args],
        capture_output=True,
        text=True,
        env={k: v for k, v in merged.items() if v is not None},
        input=stdin,
        timeout=300,
    )


def script_model(tmp_path: Path, name: str, *turns: object, **options: object) -> str:
    """A ``script:`` model name whose file answers with ``turns`` in order."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"turns": list(turns), **options}))
    return f"script:{path}"
