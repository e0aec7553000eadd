"""A one-tool package (``noop``) written to a temporary folder, shared by the benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

TOOL = {
    "name": "noop",
    "description": "Return the given text; a trivial tool for measuring overhead.",
    "input_schema": {
        "type": "object",
        "required": ["text"],
        "properties": {"text": {"type": "string", "description": "Text to return."}},
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True},
}
HANDLERS = "async def noop(args, ctx):\n    return args['text']\n"


def write_package(root: Path) -> Path:
    """Write the package under ``root`` and return its folder."""
    package = root / "bench_pkg"
    (package / "tools").mkdir(parents=True)
    (package / "tools" / "noop.json").write_text(json.dumps(TOOL))
    (package / "handlers.py").write_text(HANDLERS)
    return package
