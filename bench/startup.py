"""Start-up cost of the ``corral`` command and of ``import corral``, in fresh processes.

    .venv/bin/python bench/startup.py [--runs N]

Each case runs N times in a new interpreter (round robin, after one warm-up run each, so a
busy moment of the machine spreads over all cases); min and median wall times are printed
beside two baselines measured in the same run: the interpreter alone (``pass``) and
``import corral.platform``, which is what ``import corral`` cost while the package imported
its platform eagerly. ``typer`` with its help renderer is the floor of any ``--help``, and
``bench/startup_floor.py`` (typer, rich, pydantic, SQLAlchemy's async ORM reading one table of
the same database) the floor of any command that opens the platform with the chosen
dependencies: the "x deps" column is each case against it.

Four commands open the platform (on a data folder made here, holding one empty
conversation) without talking to a model: ``tools list``, ``approvals list``,
``skills list`` and ``conversations show``. Each is also run once under ``-X importtime``:
the sum of its top-level imports is printed, a figure much less noisy than wall time on a
loaded machine. Targets: ``corral --help`` and each of the four under 0.5 s (median).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from outcome import Figure, finish

TARGET_SECONDS = 0.5


def child_environment(cache: Path) -> dict[str, str]:
    """This environment with bytecode written (under ``cache``, never beside the sources), as
    an installed package has it: with ``PYTHONDONTWRITEBYTECODE`` set, every run would
    compile each of Corral's modules again, a second that no user pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


ENV: dict[str, str] | None = None
"""The children's environment, set by :func:`main`."""


def corral_command() -> list[str]:
    """The installed ``corral`` script beside this interpreter, else ``python -m corral``."""
    script = Path(sys.executable).with_name("corral")
    return [str(script)] if script.exists() else [sys.executable, "-m", "corral"]


PLATFORM_COMMANDS = ("tools list", "approvals list", "skills list", "conversations show")
"""The commands that open the platform, each held to :data:`TARGET_SECONDS`."""
TARGETED = ("corral --help", *(f"corral {c}" for c in PLATFORM_COMMANDS))


def prepare(data: Path) -> str:
    """Make the data folder (migrated, packages installed) with one empty conversation."""
    import corral

    async def start() -> str:
        async with corral.open(data) as platform:
            info = await platform.runtime.start_conversation(title="startup bench")
            return info.id

    return asyncio.run(start())


FLOOR_SCRIPT = Path(__file__).with_name("startup_floor.py")


def cases(data: Path, conversation_id: str) -> dict[str, list[str]]:
    python = sys.executable
    corral = [*corral_command(), "--data-dir", str(data)]
    arguments = {"conversations show": [conversation_id]}
    return {
        "python -c pass": [python, "-c", "pass"],
        "import corral.platform": [python, "-c", "import corral.platform"],
        "import typer (+ help)": [python, "-c", "import typer, typer.rich_utils"],
        "import corral": [python, "-c", "import corral"],
        "dependency floor": [python, str(FLOOR_SCRIPT), str(data / "corral.db")],
        "corral --help": [*corral_command(), "--help"],
        **{
            f"corral {command}": [*corral, *command.split(), *arguments.get(command, [])]
            for command in PLATFORM_COMMANDS
        },
    }


_IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| \S")
"""A top-level import (nested ones are indented past the one space after the bar)."""


def import_seconds(argv: list[str]) -> float:
    """The sum of the top-level imports' cumulative times of one run under ``-X importtime``."""
    if argv[0] != sys.executable:
        argv = [sys.executable, "-m", "corral", *argv[1:]]
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        env=ENV,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = (_IMPORT_LINE.match(line) for line in done.stderr.splitlines())
    return sum(int(m.group(1)) for m in lines if m) / 1e6


def run_once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
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
    global ENV
    with tempfile.TemporaryDirectory(prefix="corral-startup-") as folder:
        # Passable by the uid shell commands run as, so `execute` loads as it does in use.
        os.chmod(folder, 0o711)
        ENV = child_environment(Path(folder) / "pycache")
        data = Path(folder) / "data"
        commands = cases(data, prepare(data))
        timings = measure(commands, options.runs)
        imports = {name: import_seconds(argv) for name, argv in commands.items()}
    medians = {name: statistics.median(times) for name, times in timings.items()}
    floor, eager = medians["python -c pass"], medians["import corral.platform"]
    dependencies = medians["dependency floor"]
    print(f"runs per case: {options.runs}; interpreter: {sys.executable}")
    print(
        f"{'case':<26} {'min s':>7} {'median s':>9} {'x floor':>8} {'x eager':>8} "
        f"{'x --help':>8} {'x deps':>7} {'imports s':>10}"
    )
    helped = medians["corral --help"]
    for name, times in timings.items():
        median = medians[name]
        print(
            f"{name:<26} {min(times):7.3f} {median:9.3f} {median / floor:8.1f} "
            f"{median / eager:8.2f} {median / helped:8.2f} {median / dependencies:7.2f} "
            f"{imports[name]:10.3f}"
        )
    finish(
        "startup",
        [
            Figure(
                name=f"{name} (median)",
                value=medians[name],
                unit="s",
                baseline=floor,
                target=f"< {TARGET_SECONDS} s" if name in TARGETED else "",
                met=medians[name] < TARGET_SECONDS if name in TARGETED else None,
            )
            for name in timings
        ],
    )


if __name__ == "__main__":
    main()
