"""Start-up cost of the ``corral`` command and of ``import corral``, in fresh processes.

    .venv/bin/python bench/startup.py [--runs N]

Each case runs N times in a new interpreter (round robin, after one warm-up run each, so a
busy moment of the machine spreads over all cases); min and median wall times are printed
beside two baselines measured in the same run: the interpreter alone (``pass``) and
``import corral.platform``, which is what ``import corral`` cost while the package imported
its platform eagerly. ``typer`` with its help renderer is the floor of any ``--help``.
Target: ``corral --help`` under 0.5 s (median).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from outcome import Figure, finish

TARGET_SECONDS = 0.5


def corral_command() -> list[str]:
    """The installed ``corral`` script beside this interpreter, else ``python -m corral``."""
    script = Path(sys.executable).with_name("corral")
    return [str(script)] if script.exists() else [sys.executable, "-m", "corral"]


def cases() -> dict[str, list[str]]:
    python = sys.executable
    return {
        "python -c pass": [python, "-c", "pass"],
        "import corral.platform": [python, "-c", "import corral.platform"],
        "import typer (+ help)": [python, "-c", "import typer, typer.rich_utils"],
        "import corral": [python, "-c", "import corral"],
        "corral --help": [*corral_command(), "--help"],
    }


def run_once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(runs: int) -> dict[str, list[float]]:
    commands = cases()
    for argv in commands.values():
        run_once(argv)  # warm the page cache and write bytecode
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            timings[name].append(run_once(argv))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each case (default 5)")
    options = parser.parse_args()
    timings = measure(options.runs)
    medians = {name: statistics.median(times) for name, times in timings.items()}
    floor, eager = medians["python -c pass"], medians["import corral.platform"]
    print(f"runs per case: {options.runs}; interpreter: {sys.executable}")
    print(f"{'case':<24} {'min s':>7} {'median s':>9} {'x floor':>8} {'x eager':>8}")
    for name, times in timings.items():
        median = medians[name]
        print(
            f"{name:<24} {min(times):7.3f} {median:9.3f} "
            f"{median / floor:8.1f} {median / eager:8.2f}"
        )
    helped = medians["corral --help"]
    finish(
        "startup",
        [
            Figure(
                name=f"{name} (median)",
                value=medians[name],
                unit="s",
                baseline=floor,
                target=f"< {TARGET_SECONDS} s" if name == "corral --help" else "",
                met=helped < TARGET_SECONDS if name == "corral --help" else None,
            )
            for name in timings
        ],
    )


if __name__ == "__main__":
    main()
