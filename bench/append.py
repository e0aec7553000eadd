"""One timeline append of one row against a raw ``sqlite3`` insert and commit, same database.

    .venv/bin/python bench/append.py [--rows N]

Both write the same table of the same WAL database (``synchronous=NORMAL``, as the store
configures it), one row and one commit at a time, awaited one after another: the raw side is
a plain ``sqlite3`` connection in this thread (SQLite's defaults otherwise, as issue 18
measured it; a second raw line leaves checkpoints out, as our inline path does), ours is
``Runtime.append`` (the store's writer — inline when the lock is free, checkpoints in its
thread — the sequence number, the announcement to the prompt cache). A third line appends
from ten tasks at once. A fourth forces every append through the writer's thread (one hop
each), the path taken when another connection holds the write lock.
Target (issue 18): one append at most 2x the raw insert and commit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import corral
from corral.runtime.timeline import NewRow
from corral.store.writer import SqliteWriter
from outcome import Figure, finish

RATIO_TARGET = 2.0
ROUNDS = 5
"""Each side runs this many rounds, alternating; the median round is reported."""


def raw_round(
    path: Path, conversation_id: str, rows: int, first: int, *, checkpoints: bool = True
) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    if not checkpoints:
        db.execute("PRAGMA wal_autocheckpoint=0")
    data = json.dumps({"text": "hello"})
    started = time.perf_counter()
    for seq in range(first, first + rows):
        db.execute("BEGIN")
        db.execute(
            "INSERT INTO conversation_rows (conversation_id, seq, kind, data, created_at) "
            "VALUES (?, ?, 'user_message', ?, '2026-01-01 00:00:00.000000')",
            (conversation_id, seq, data),
        )
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed / rows


async def measure(rows: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        async with corral.open(Path(tmp) / "data") as platform:
            rt = platform.runtime
            ours_conversation = await rt.start_conversation()
            raw_conversation = await rt.start_conversation()
            concurrent_conversation = await rt.start_conversation()
            path = Path(tmp) / "data" / "corral.db"
            row = [NewRow(kind="user_message", data={"text": "hello"})]
            raw, bare, ours, together = [], [], [], []
            for round_ in range(ROUNDS):
                raw.append(raw_round(path, raw_conversation.id, rows, 2 * round_ * rows + 1))
                bare.append(
                    raw_round(
                        path,
                        raw_conversation.id,
                        rows,
                        (2 * round_ + 1) * rows + 1,
                        checkpoints=False,
                    )
                )
                started = time.perf_counter()
                for _ in range(rows):
                    await rt.append(ours_conversation.id, row)
                ours.append((time.perf_counter() - started) / rows)
                started = time.perf_counter()
                await asyncio.gather(
                    *(
                        rt.append(concurrent_conversation.id, row)
                        for _ in range(rows // 10)
                        for _ in range(10)
                    )
                )
                together.append((time.perf_counter() - started) / rows)
            writer = rt.kernel.writer
            assert isinstance(writer, SqliteWriter)
            writer.inline = False
            hop_conversation = await rt.start_conversation()
            hopped = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                for _ in range(rows):
                    await rt.append(hop_conversation.id, row)
                hopped.append((time.perf_counter() - started) / rows)
            writer.inline = True
            stored = await rt.conversations.rows(ours_conversation.id)
            assert [r.seq for r in stored] == list(range(1, ROUNDS * rows + 1))
    raw_us, ours_us = statistics.median(raw) * 1e6, statistics.median(ours) * 1e6
    print(f"rows per round: {rows}, rounds: {ROUNDS}")
    return [
        Figure(name="raw sqlite3 insert + commit, one row", value=raw_us, unit="µs"),
        Figure(
            name="raw sqlite3 insert + commit, checkpoints left out",
            value=statistics.median(bare) * 1e6,
            unit="µs",
            baseline=raw_us,
        ),
        Figure(
            name="corral append, one row",
            value=ours_us,
            unit="µs",
            baseline=raw_us,
            target=f"<= {RATIO_TARGET:g}x",
            met=ours_us <= RATIO_TARGET * raw_us,
        ),
        Figure(
            name="corral append, one row, 10 at once (per row)",
            value=statistics.median(together) * 1e6,
            unit="µs",
            baseline=raw_us,
        ),
        Figure(
            name="corral append, one row, through the writer thread",
            value=statistics.median(hopped) * 1e6,
            unit="µs",
            baseline=raw_us,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000)
    options = parser.parse_args()
    finish("append", asyncio.run(measure(options.rows)))


if __name__ == "__main__":
    main()
