"""fs_search over a 20,000-file tree against ``grep -rn`` on the same tree, in the same run.

    .venv/bin/python bench/files.py [--files N] [--runs N]

The tree is written once into a fresh project drive: folders of 100 text files, each about
1 KB of code-like lines, with a needle in one file of a hundred. Each run times, in turn:
``grep -rn`` on the tree (the baseline), fs_search through the whole dispatch pipeline with
ripgrep, and fs_search with the pure-Python engine. Both fs_search engines must find exactly
the needles grep finds. Printed: min and median of each, and each side's ratio to grep.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import corral
from corral.packages.drive.service import Drive
from outcome import Figure, finish

PATTERN = r"needle_[0-9]+"


def build_tree(root: Path, files: int) -> int:
    body = "".join(
        f"def function_{n}(value):\n    return value * {n}  # plain line\n" for n in range(12)
    )
    needles = 0
    for index in range(files):
        folder = root / f"pkg{index // 1000}" / f"mod{(index // 100) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        text = body
        if index % 100 == 7:
            text += f"SECRET = 'needle_{index}'\n"
            needles += 1
        (folder / f"file{index}.py").write_text(text)
    return needles


def grep(root: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(
        ["grep", "-rnE", PATTERN, str(root)], capture_output=True, text=True, check=False
    )
    return time.perf_counter() - started, len(done.stdout.splitlines())


async def fs_search(platform: corral.Platform, engine: str | None) -> tuple[float, int]:
    platform.services.require(Drive).rg = engine
    started = time.perf_counter()
    result = await platform.call_tool("fs_search", {"pattern": PATTERN, "max_results": 2000})
    elapsed = time.perf_counter() - started
    assert result.status == "ok", result.text
    assert result.data is not None
    return elapsed, int(result.data["matches"])


def summary(name: str, times: list[float], baseline: list[float] | None) -> str:
    low, mid = min(times), statistics.median(times)
    line = f"{name:<24} min {low * 1000:8.1f} ms   median {mid * 1000:8.1f} ms"
    if baseline is not None:
        line += f"   ratio to grep: min {low / min(baseline):.2f}x, median "
        line += f"{mid / statistics.median(baseline):.2f}x"
    return line


async def main(files: int, runs: int) -> list[Figure]:
    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory() as tmp:
        async with corral.open(Path(tmp) / "data") as platform:
            drive = Path(tmp) / "data" / "drive"
            started = time.perf_counter()
            needles = build_tree(drive, files)
            built = time.perf_counter() - started
            print(f"tree: {files:,} files, {needles} needles, built in {built:.1f} s")
            timings: dict[str, list[float]] = {
                "grep -rn": [],
                "fs_search (ripgrep)": [],
                "fs_search (python)": [],
            }
            for _ in range(runs):
                took, found = grep(drive)
                assert found == needles, (found, needles)
                timings["grep -rn"].append(took)
                if rg is not None:
                    took, found = await fs_search(platform, rg)
                    assert found == needles, (found, needles)
                    timings["fs_search (ripgrep)"].append(took)
                took, found = await fs_search(platform, None)
                assert found == needles, (found, needles)
                timings["fs_search (python)"].append(took)
            print(f"runs: {runs}")
            base = timings["grep -rn"]
            print(summary("grep -rn", base, None))
            for name in ("fs_search (ripgrep)", "fs_search (python)"):
                if timings[name]:
                    print(summary(name, timings[name], base))
                else:
                    print(f"{name:<24} skipped: rg is not installed (Debian package ripgrep)")
    grep_ms = statistics.median(base) * 1e3
    return [Figure(name="grep -rn (median)", value=grep_ms, unit="ms")] + [
        Figure(
            name=f"{name} (median)",
            value=statistics.median(timings[name]) * 1e3,
            unit="ms",
            baseline=grep_ms,
        )
        for name in ("fs_search (ripgrep)", "fs_search (python)")
        if timings[name]
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    finish("files", asyncio.run(main(options.files, options.runs)))
