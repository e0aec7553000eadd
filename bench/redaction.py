"""Cost of redacting 1 MB of command output with 10 secrets, encoded forms included.

    .venv/bin/python bench/redaction.py [--runs 3] [--mb 1]

The output is what a busy command prints: log lines with paths and numbers, base64 and hex
dumps, a few secrets (literal, base64 at an offset, wrapped hex). The baseline is the
literal-only matcher the redactor used before it knew encodings (one alternation of the
escaped values), on the same text in the same run. Figures: the redactor on the whole text
at once (result shaping), and as a stream in 64 KiB chunks (the runner's live output and
background logs), min and median of ``--runs``.

Target: under 100 ms per MB either way (a command printing a megabyte takes longer than
that to produce it).
"""

from __future__ import annotations

import argparse
import base64
import random
import re
import statistics
import time
from collections.abc import Callable

from corral.secrets import Redactor
from outcome import Figure, finish

TARGET_MS = 100.0
CHUNK = 64 * 1024


def secrets(count: int, rng: random.Random) -> list[str]:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    prefixes = ["ghp_", "sk-", "xoxb-", "glpat-", ""]
    return [
        prefixes[i % len(prefixes)] + "".join(rng.choice(letters) for _ in range(32))
        for i in range(count)
    ]


def output(size: int, values: list[str], rng: random.Random) -> str:
    parts: list[str] = []
    total = 0
    line = 0
    while total < size:
        line += 1
        kind = line % 50
        if kind == 0:
            text = base64.b64encode(b"x" + values[line % len(values)].encode()).decode()
        elif kind == 25:
            hexed = values[line % len(values)].encode().hex()
            text = "\n".join(hexed[i : i + 30] for i in range(0, len(hexed), 30))
        elif kind % 7 == 0:
            text = base64.b64encode(rng.randbytes(57)).decode()
        elif kind % 11 == 0:
            text = rng.randbytes(30).hex()
        else:
            text = f"{line:>7} INFO worker[{rng.randint(1, 64)}] /srv/app/src/module_{kind}.py ok"
        parts.append(text)
        total += len(text) + 1
    return "\n".join(parts)


def timed(runs: int, work: Callable[[], object]) -> list[float]:
    found = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        found.append((time.perf_counter() - started) * 1000)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mb", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(28)
    values = secrets(10, rng)
    text = output(int(args.mb * 1_000_000), values, rng)
    literal = re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))
    redactor = Redactor(values)

    def streamed() -> str:
        stream = redactor.stream()
        pieces = [stream.feed(text[i : i + CHUNK]) for i in range(0, len(text), CHUNK)]
        return "".join([*pieces, stream.end()])

    assert streamed() == redactor(text), "the stream and the whole text must agree"
    assert not any(v in redactor(text) for v in values)
    baseline = timed(args.runs, lambda: literal.sub("[redacted]", text))
    whole = timed(args.runs, lambda: redactor(text))
    chunked = timed(args.runs, streamed)
    base = statistics.median(baseline)
    figures = [Figure(name="literal only (baseline), median", value=base, unit="ms")]
    for name, values_ms in (("whole text", whole), ("stream, 64 KiB chunks", chunked)):
        median = statistics.median(values_ms)
        figures.append(Figure(name=f"{name}, min", value=min(values_ms), unit="ms"))
        figures.append(
            Figure(
                name=f"{name}, median",
                value=median,
                unit="ms",
                baseline=base,
                target=f"< {TARGET_MS:.0f} ms",
                met=median < TARGET_MS * args.mb,
            )
        )
    finish("redaction", figures)


if __name__ == "__main__":
    main()
