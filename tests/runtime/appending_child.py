"""A child process for the durability tests: appends to one conversation in bursts until it
is killed, and reports every acknowledged sequence number on stdout as it comes.

It appends through the runtime's :class:`~corral.runtime.appends.Appender` on the store's
writer, as a run does, without loading packages (a platform takes seconds to open).

    python -m tests.runtime.appending_child DATABASE_URL CONVERSATION_ID WRITER_NAME

:mod:`tests.runtime.appending` starts it and reads what it says.

Each burst is ``BURST`` appends at once (so the writer shares commits between them); a
number is printed only after its append returned. Each row carries ``{"writer", "n"}`` so the
test can check that the row stored under an acknowledged number is the one acknowledged.
"""

from __future__ import annotations

import asyncio
import sys

from corral.runtime.appends import Appender
from corral.runtime.timeline import NewRow
from corral.store import make_engine
from corral.store.writer import open_writer

BURST = 8


async def main(database_url: str, conversation_id: str, writer: str) -> None:
    engine = make_engine(database_url)
    appender = Appender(engine, open_writer(engine))
    out = sys.stdout
    n = 0

    async def one(k: int) -> None:
        row = NewRow(kind="user_message", data={"writer": writer, "n": k})
        (stored,) = await appender.append(conversation_id, [row])
        out.write(f"{stored.seq} {k}\n")
        out.flush()

    out.write("ready\n")
    out.flush()
    while True:  # until killed
        await asyncio.gather(*(one(n + i) for i in range(BURST)))
        n += BURST


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
