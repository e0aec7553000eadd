"""Driving :mod:`tests.runtime.appending_child` from a test: start it, read what it
acknowledged, kill it with SIGKILL, and check the store against what it was told."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from corral.runtime.timeline import TimelineRow

ROOT = Path(__file__).resolve().parents[2]


async def start_child(
    database_url: str, conversation_id: str, name: str
) -> asyncio.subprocess.Process:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.runtime.appending_child",
        database_url,
        conversation_id,
        name,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    assert await child.stdout.readline() == b"ready\n"
    return child


async def acknowledged(child: asyncio.subprocess.Process, until: int) -> dict[int, int]:
    """Read acknowledgements until ``until`` came, kill the child with SIGKILL mid-burst,
    then read what it acknowledged before it died."""
    assert child.stdout is not None
    told: dict[int, int] = {}
    while len(told) < until:
        line = await child.stdout.readline()
        assert line, f"the child ended early with {await child.wait()}"
        seq, n = line.split()
        told[int(seq)] = int(n)
    child.send_signal(signal.SIGKILL)
    for line in (await child.stdout.read()).splitlines():
        seq, n = line.split()
        told[int(seq)] = int(n)
    assert await child.wait() == -signal.SIGKILL
    return told


def check(stored: list[TimelineRow], told: dict[str, dict[int, int]]) -> None:
    assert [r.seq for r in stored] == list(range(1, len(stored) + 1)), "a gap or a duplicate"
    by_seq = {r.seq: r.data for r in stored}
    for writer, acknowledged in told.items():
        for seq, n in acknowledged.items():
            assert by_seq.get(seq) == {"writer": writer, "n": n}, (writer, seq, n)
