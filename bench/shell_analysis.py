"""Command analysis throughput: commands per second on a mixed corpus, and the time to
analyse a 100 KB script, each beside raw tree-sitter parsing of the same text in the same
run (the floor: analysis parses, then walks). Part of the later ``bench/shell.py``.

A second floor, "parse + visit", also steps a tree cursor over every node from Python and
reads its type: the least any walker written in Python does before it decides anything. The
gap between it and the analysis is the analyser's own logic.

Run: ``.venv/bin/python bench/shell_analysis.py [--seconds 2]``

Targets (issue 18): at least 30,000 commands/s on the mixed corpus, the 100 KB script under
80 ms (best of 5). Times are this process's CPU time (``time.process_time``), so that other
work on a shared machine does not count; the analysis is single-threaded, so on an idle
machine it equals the wall-clock time. Both are measured on fresh analyses; ``analyze``
also remembers verdicts on short command lines (agents repeat commands), printed separately
as "repeated commands".
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Parser

from corral.shell.analysis import analyze
from corral.shell.analysis._analyze import _analyze as analyze_fresh
from outcome import Figure, finish

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "shell" / "corpus"
HOME = "/home/agent"
CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db", "/srv/corral/data/keys", "/srv/corral/secret.key")
TARGET_RATE = 30_000.0
TARGET_SCRIPT_MS = 80.0
PARSER = Parser(Language(tree_sitter_bash.language()))


def corpus_commands(*names: str) -> list[str]:
    """Every command of the named corpus files, in file order."""
    commands: list[str] = []
    for name in names:
        body: list[str] | None = None
        for line in (CORPUS / name).read_text("utf-8").splitlines():
            if line.startswith("=== "):
                if body is not None:
                    commands.append("\n".join(body))
                body = [] if "[escaped]" not in line else None
            elif body is not None:
                body.append(line)
        if body is not None:
            commands.append("\n".join(body))
    return [c for c in commands if c.strip()]


def script_of(size: int) -> str:
    """A realistic build script of about ``size`` bytes (functions, loops, here-docs…)."""
    block = """
# --- step {n} -------------------------------------------------------------
build_{n}() {{
    local out="build/{n}"
    mkdir -p "$out" && cd src/{n} || return 1
    for f in *.c; do
        gcc -O2 -c "$f" -o "../../$out/${{f%.c}}.o" 2>>../../build.log
    done
    cd - >/dev/null
    if [ -f "src/{n}/Makefile" ]; then make -C "src/{n}" -j4 all; else echo "skip {n}"; fi
}}
build_{n} && tar czf "dist/{n}.tgz" -C build {n}
grep -rn "TODO" src/{n} | sed 's/^/  /' | sort -u > "reports/{n}.txt"
cat > "meta/{n}.json" <<'JSON'
{{"step": {n}, "flags": ["-O2", "-Wall"]}}
JSON
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "meta/{n}.json"
bash -c 'cd docs && make html' || echo "docs {n} failed"
"""
    parts: list[str] = ["#!/usr/bin/env bash\nset -euo pipefail\n"]
    n = 0
    while sum(len(p) for p in parts) < size:
        parts.append(block.format(n=n))
        n += 1
    return "".join(parts)


def analyse(command: str) -> object:
    return analyze_fresh(command, PROTECTED, HOME, CWD, False)


def analyse_repeated(command: str) -> object:
    return analyze(command, home=HOME, cwd=CWD, protected_paths=PROTECTED)


def parse(command: str) -> object:
    return PARSER.parse(command.encode())


def parse_and_visit(command: str) -> int:
    cursor = PARSER.parse(command.encode()).walk()
    visited = 0
    while True:
        node = cursor.node
        visited += node is not None and bool(node.type)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return visited


def throughput(
    commands: list[str], seconds: float, work: Callable[[str], object] = analyse
) -> tuple[float, int]:
    done = 0
    start = time.process_time()
    deadline = start + seconds
    while time.process_time() < deadline:
        for command in commands:
            work(command)
        done += len(commands)
    return done / (time.process_time() - start), done


def best_ms(script: str, work: Callable[[str], object], times: int = 5) -> list[float]:
    timings = []
    for _ in range(times):
        start = time.process_time()
        work(script)
        timings.append((time.process_time() - start) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()

    commands = corpus_commands("allowed.txt", "evasions.txt")
    allowed = corpus_commands("allowed.txt")
    analyze("true")  # warm the parser and caches
    rate, done = throughput(commands, args.seconds)
    ok_rate, _ = throughput(allowed, args.seconds)
    repeat_rate, _ = throughput(commands, args.seconds, analyse_repeated)
    parse_rate, _ = throughput(commands, args.seconds, parse)
    visit_rate, _ = throughput(commands, args.seconds, parse_and_visit)
    print(f"mixed corpus      : {len(commands)} commands, {done} analysed, {rate:,.0f} commands/s")
    print(f"ordinary commands : {len(allowed)} commands, {ok_rate:,.0f} commands/s")
    print(f"repeated commands : {repeat_rate:,.0f} commands/s (verdicts remembered)")

    script = script_of(100 * 1024)
    result = analyze(script, home=HOME, cwd=CWD, protected_paths=PROTECTED)
    assert result.allowed, (result.rule, result.word, result.detail)
    timings = best_ms(script, analyse)
    parsed = best_ms(script, parse)
    visited = best_ms(script, parse_and_visit)
    print(
        f"100 KB script     : {len(script):,} bytes, {len(result.commands):,} commands, "
        f"median {statistics.median(timings):.0f} ms (best {min(timings):.0f} ms)"
    )
    finish(
        "shell_analysis",
        [
            Figure(
                name="mixed corpus (commands/s)",
                value=rate,
                unit="cmd/s",
                baseline=parse_rate,
                target=f">= {TARGET_RATE:,.0f}/s",
                met=rate >= TARGET_RATE,
            ),
            Figure(
                name="parse + visit, mixed corpus (commands/s)",
                value=visit_rate,
                unit="cmd/s",
                baseline=parse_rate,
            ),
            Figure(
                name="ordinary commands (commands/s)",
                value=ok_rate,
                unit="cmd/s",
                baseline=parse_rate,
            ),
            Figure(
                name="repeated commands (commands/s)",
                value=repeat_rate,
                unit="cmd/s",
                baseline=parse_rate,
            ),
            Figure(
                name="100 KB script (best of 5)",
                value=min(timings),
                unit="ms",
                baseline=min(parsed),
                target=f"< {TARGET_SCRIPT_MS:.0f} ms",
                met=min(timings) < TARGET_SCRIPT_MS,
            ),
            Figure(
                name="100 KB script, parse + visit (best of 5)",
                value=min(visited),
                unit="ms",
                baseline=min(parsed),
            ),
        ],
    )


if __name__ == "__main__":
    main()
