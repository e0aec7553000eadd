"""Every verdict the analyser gives on the corpora and the bench's 100 KB script, pinned.

``verdict_snapshot.json`` holds, for every command of ``tests/shell/corpus/`` (escaped
entries decoded) and the 100 KB build script of ``bench/shell_analysis.py``, in three
contexts, the verdict (allowed, rule, word, detail) and a digest of what an allowed
command extracts (commands, paths, ``cd`` moves). A change meant only to make the analysis
faster must leave every entry identical; a change of behaviour regenerates the file on
purpose (``python -m tests.shell.test_verdict_snapshot`` from the repository root) and the
diff shows every verdict it moved.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from corral.shell.analysis._analyze import _analyze
from corral.shell.analysis._paths import platform_sequence
from tests.shell.test_analysis_corpus import CWD, HOME, PROTECTED, UNCONFINED_HOME, load

SNAPSHOT = Path(__file__).parent / "verdict_snapshot.json"
BENCH = Path(__file__).resolve().parents[2] / "bench" / "shell_analysis.py"
CORPORA = ("allowed.txt", "evasions.txt", "hardening.txt")
CONTEXTS: dict[str, tuple[str | None, str | None, bool]] = {
    "sandboxed": (HOME, CWD, False),
    "unconfined": (UNCONFINED_HOME, CWD, True),
    "no_context": (None, None, False),
}
"""Name: (home, cwd, unconfined); the protected paths are the corpus's in every context."""


def _bench_script() -> str:
    """The bench's 100 KB script (``bench/`` is put on the path only while it loads)."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        spec = importlib.util.spec_from_file_location("_shell_analysis_bench", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    script: str = module.script_of(100 * 1024)
    return script


def _inputs() -> list[tuple[str, str]]:
    """(key, command) for every corpus command and the bench script, in a stable order."""
    inputs = [(f"{name}:L{case.line}", case.command) for name in CORPORA for case in load(name)]
    inputs.append(("bench:100KB", _bench_script()))
    return inputs


def _verdict(command: str, home: str | None, cwd: str | None, unconfined: bool) -> dict[str, Any]:
    result = _analyze(command, platform_sequence(PROTECTED), home, cwd, unconfined)
    extracted = repr((result.commands, result.paths, result.cd_moves))
    return {
        "allowed": result.allowed,
        "rule": result.rule,
        "word": result.word,
        "detail": result.detail,
        "extracted": _digest(extracted),
        "commands": len(result.commands),
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def compute() -> dict[str, Any]:
    inputs = _inputs()
    return {
        "inputs": _digest(repr(inputs)),
        "verdicts": {
            context: {key: _verdict(text, *args) for key, text in inputs}
            for context, args in CONTEXTS.items()
        },
    }


def test_every_verdict_matches_the_snapshot() -> None:
    expected = json.loads(SNAPSHOT.read_text("utf-8"))
    actual = compute()
    assert actual["inputs"] == expected["inputs"], "the corpus or the bench script changed"
    for context, verdicts in expected["verdicts"].items():
        moved = {
            key: (verdict, actual["verdicts"][context][key])
            for key, verdict in verdicts.items()
            if actual["verdicts"][context][key] != verdict
        }
        if moved:
            key, (was, now) = next(iter(moved.items()))
            raise AssertionError(f"{context}: {len(moved)} moved; first {key}: {was} -> {now}")
    assert actual["verdicts"].keys() == expected["verdicts"].keys()


def write() -> None:
    """Regenerate the snapshot, one entry a line so that a diff names each moved verdict."""
    snapshot = compute()
    lines = ["{", f' "inputs": {json.dumps(snapshot["inputs"])},', ' "verdicts": {']
    contexts = list(snapshot["verdicts"].items())
    for number, (context, verdicts) in enumerate(contexts):
        lines.append(f"  {json.dumps(context)}: {{")
        entries = [f"   {json.dumps(key)}: {json.dumps(v)}" for key, v in verdicts.items()]
        lines.append(",\n".join(entries))
        lines.append("  }" + ("," if number + 1 < len(contexts) else ""))
    lines.extend([" }", "}"])
    SNAPSHOT.write_text("\n".join(lines) + "\n", "utf-8")


if __name__ == "__main__":
    write()
