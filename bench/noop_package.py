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
SYNC_HANDLERS = (
    "def noop_sync(args, ctx):\n    return args['text']\n\n\n"
    "def noop_inline(args, ctx):\n    return args['text']\n"
)


def write_package(root: Path, *, sync_tools: bool = False) -> Path:
    """Write the package under ``root`` and return its folder; ``sync_tools`` adds
    ``noop_sync`` (a sync handler, run in a thread) and ``noop_inline`` (declared
    ``"blocking": false``, run inline)."""
    package = root / "bench_pkg"
    (package / "tools").mkdir(parents=True)
    (package / "tools" / "noop.json").write_text(json.dumps(TOOL))
    handlers = HANDLERS
    if sync_tools:
        for name, extra in (("noop_sync", {}), ("noop_inline", {"blocking": False})):
            tool = {**TOOL, "name": name, **extra}
            (package / "tools" / f"{name}.json").write_text(json.dumps(tool))
        handlers += "\n\n" + SYNC_HANDLERS
    (package / "handlers.py").write_text(handlers)
    return package
