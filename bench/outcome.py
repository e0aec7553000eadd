"""How every bench reports: its figures as a table, one JSON line, and its exit status.

A bench measures its baseline in the same run, prints each figure beside it as a ratio, and
exits 0 when every target is met, 1 when one is missed, 2 when it cannot run here (data or
a tool is absent; the reason is printed). The last line of its output is the JSON document
``bench/run_all.py`` reads:

    {"bench": "dispatch", "met": true, "figures": [{"name": ..., "value": ..., "unit": ...,
     "baseline": ..., "ratio": ..., "target": ..., "met": ...}]}
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from typing import NoReturn

EXIT_MET, EXIT_MISSED, EXIT_SKIPPED = 0, 1, 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One measure beside its same-run baseline, with the target it must meet."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    """The same-run reference the ratio is taken against (same unit)."""
    target: str = ""
    """Human-readable target, e.g. ``< 25 µs``; empty when the figure is informative only."""
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline


def finish(bench: str, figures: list[Figure]) -> NoReturn:
    """Print the table and the JSON line, then exit 0 (all met) or 1 (one missed)."""
    width = max(len(f.name) for f in figures)
    for f in figures:
        ratio = f"{f.ratio:8.2f}x" if f.ratio is not None else " " * 9
        baseline = f"{f.baseline:10.2f}" if f.baseline is not None else " " * 10
        verdict = "" if f.met is None else ("met" if f.met else "NOT MET")
        value = f"{f.value:10.2f}" if abs(f.value) >= 10 else f"{f.value:10.4f}"
        print(
            f"{f.name:<{width}}  {value} {f.unit:<7} baseline {baseline}  "
            f"ratio {ratio}  {f.target:<14} {verdict}"
        )
    met = all(f.met is not False for f in figures)
    rows = [{**asdict(f), "ratio": f.ratio} for f in figures]
    print(json.dumps({"bench": bench, "met": met, "figures": rows}, ensure_ascii=False))
    sys.stdout.flush()
    raise SystemExit(EXIT_MET if met else EXIT_MISSED)


def skip(bench: str, reason: str) -> NoReturn:
    """Say why the bench cannot run here and exit 2."""
    print(f"{bench}: skipped: {reason}", file=sys.stderr)
    print(json.dumps({"bench": bench, "skipped": reason}, ensure_ascii=False))
    sys.stdout.flush()
    raise SystemExit(EXIT_SKIPPED)
