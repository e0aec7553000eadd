"""Run every bench and print one table.

    .venv/bin/python bench/run_all.py [--runs 3] [--issue 39] [--only a,b] [--skip a,b]
        [--timeout S]

Every script in ``bench/`` except the shared helpers runs ``--runs`` times, one after the
other (never in parallel: they measure time). Each one reports through
:mod:`outcome` (its last output line is JSON; exit 0 met, 1 missed, 2 skipped); a bench
that only prints JSON with ``met``/``ratio`` (``sandbox_spawn.py``) or nothing machine
readable still gets a row with its exit status. The table shows, per figure, the min and
median of its values over the runs, the ratio to its same-run baseline (median), the
target and how many runs met it, then how many targets every run met. ``--issue N`` runs
the benches an issue's figure table names (:data:`ISSUES`). Exits 1 when any target was
missed in any run, else 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
HELPERS = frozenset({"run_all", "outcome", "noop_package", "long_conversation", "cluster_workers"})
"""Modules in bench/ that are not benches."""
ISSUES = {
    "39": (
        "execute_call",
        "shell_analysis",
        "startup",
        "loop",
        "http_calls",
        "embedded_concurrency",
    ),
}
"""The benches whose figures an issue asks for, in its items' order."""


@dataclass(slots=True)
class Row:
    """One figure of one bench over every run."""

    bench: str
    name: str
    unit: str = ""
    target: str = ""
    values: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    verdicts: list[bool | None] = field(default_factory=list)
    note: str = ""


def benches(only: set[str], skip: set[str], issue: str | None = None) -> list[Path]:
    if issue is not None:
        if issue not in ISSUES:
            raise SystemExit(f"no bench set for issue {issue}; known: {', '.join(ISSUES)}")
        named = [BENCH / f"{name}.py" for name in ISSUES[issue]]
        return [p for p in named if (not only or p.stem in only) and p.stem not in skip]
    found = sorted(p for p in BENCH.glob("*.py") if p.stem not in HELPERS)
    return [p for p in found if (not only or p.stem in only) and p.stem not in skip]


def last_json(output: str) -> dict[str, Any] | None:
    for line in reversed(output.strip().splitlines()):
        if line.startswith("{"):
            try:
                loaded = json.loads(line)
            except json.JSONDecodeError:
                return None
            return loaded if isinstance(loaded, dict) else None
    return None


def run_once(script: Path, timeout: float) -> tuple[int, str, float]:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=BENCH.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, "", time.perf_counter() - started
    if done.returncode not in (0, 1, 2):
        tail = (done.stderr.strip().splitlines() or ["(no error output)"])[-1]
        print(f"  {script.stem}: exit {done.returncode}: {tail}", file=sys.stderr)
    return done.returncode, done.stdout, time.perf_counter() - started


def record(rows: dict[tuple[str, str], Row], bench: str, code: int, output: str) -> None:
    """Fold one run's report into ``rows``."""
    report = last_json(output)

    def row(name: str) -> Row:
        return rows.setdefault((bench, name), Row(bench=bench, name=name))

    if code == -1:
        row("(run)").note = "timed out"
    elif report is None:
        entry = row("(run)")
        entry.verdicts.append(code == 0)
        entry.note = f"exit {code}; no JSON report"
    elif "skipped" in report:
        row("(run)").note = f"skipped: {report['skipped']}"
    elif "figures" in report:
        for figure in report["figures"]:
            entry = row(figure["name"])
            entry.unit, entry.target = figure.get("unit", ""), figure.get("target", "")
            entry.values.append(float(figure["value"]))
            if figure.get("ratio") is not None:
                entry.ratios.append(float(figure["ratio"]))
            entry.verdicts.append(figure.get("met"))
    else:  # a plain JSON summary with ratio/target/met
        entry = row("ratio")
        if "ratio" in report:
            entry.values.append(float(report["ratio"]))
        entry.target = f"<= {report['target']}x" if "target" in report else ""
        entry.verdicts.append(report.get("met"))


def cell(values: list[float]) -> str:
    if not values:
        return ""
    return f"{min(values):.4g} / {statistics.median(values):.4g}"


def print_table(rows: list[Row], runs: int) -> bool:
    header = ("bench", "figure", "min / median", "unit", "ratio (med)", "target", "met")
    lines = [header]
    missed = False
    for r in rows:
        judged = [v for v in r.verdicts if v is not None]
        met = f"{sum(judged)}/{len(judged)}" if judged else ""
        missed = missed or any(v is False for v in judged)
        ratio = f"{statistics.median(r.ratios):.3g}x" if r.ratios else ""
        lines.append((r.bench, r.name, cell(r.values), r.unit, ratio, r.target, met or r.note))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    print(f"\n{runs} run(s) of each bench; min / median over runs\n")
    for index, line in enumerate(lines):
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))
    targets = [[v for v in r.verdicts if v is not None] for r in rows]
    judged = [t for t in targets if t]
    always = sum(1 for t in judged if all(t))
    print(f"\ntargets met in every run: {always} of {len(judged)}")
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--issue", help="run the benches of this issue's figure table (39)")
    parser.add_argument("--only", default="", help="comma-separated bench names")
    parser.add_argument("--skip", default="", help="comma-separated bench names")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    options = parser.parse_args()
    names = {n for n in options.only.split(",") if n}
    skipped = {n for n in options.skip.split(",") if n}
    rows: dict[tuple[str, str], Row] = {}
    for script in benches(names, skipped, options.issue):
        for attempt in range(options.runs):
            code, output, seconds = run_once(script, options.timeout)
            print(f"{script.stem} run {attempt + 1}: exit {code} in {seconds:.1f} s", flush=True)
            record(rows, script.stem, code, output)
            if code == 2:  # it cannot run here; further runs would say the same
                break
    missed = print_table(list(rows.values()), options.runs)
    raise SystemExit(1 if missed else 0)


if __name__ == "__main__":
    main()
