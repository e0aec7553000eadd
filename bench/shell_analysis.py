"""Command analysis throughput: commands per second on a mixed corpus, and the time to
analyse a 100 KB script. Part of the later ``bench/shell.py``.

Run: ``.venv/bin/python bench/shell_analysis.py [--seconds 2]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from corral.shell.analysis import analyze

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "shell" / "corpus"
HOME = "/home/agent"
CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db", "/srv/corral/data/keys", "/srv/corral/secret.key")


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


def throughput(commands: list[str], seconds: float) -> tuple[float, int]:
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for command in commands:
            analyze(command, home=HOME, cwd=CWD, protected_paths=PROTECTED)
        done += len(commands)
    return done / (time.perf_counter() - start), done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()

    commands = corpus_commands("allowed.txt", "evasions.txt")
    allowed = corpus_commands("allowed.txt")
    analyze("true")  # warm the parser and caches
    rate, done = throughput(commands, args.seconds)
    ok_rate, _ = throughput(allowed, args.seconds)
    print(f"mixed corpus      : {len(commands)} commands, {done} analysed, {rate:,.0f} commands/s")
    print(f"ordinary commands : {len(allowed)} commands, {ok_rate:,.0f} commands/s")

    script = script_of(100 * 1024)
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        result = analyze(script, home=HOME, cwd=CWD, protected_paths=PROTECTED)
        timings.append(time.perf_counter() - start)
    assert result.allowed, (result.rule, result.word, result.detail)
    print(
        f"100 KB script     : {len(script):,} bytes, {len(result.commands):,} commands, "
        f"median {statistics.median(timings) * 1000:.0f} ms (best {min(timings) * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
