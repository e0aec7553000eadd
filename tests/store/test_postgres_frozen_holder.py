"""A process frozen inside a transaction on PostgreSQL (SIGSTOP, a paused VM) keeps its row
locks only until the idle limit our connections set: the server then ends its session, and
the others (a worker taking a run over, say) get the rows."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from sqlalchemy import text

from corral.store.engine import IDLE_IN_TRANSACTION_SECONDS, make_engine

HOLDER = """
import asyncio
import sys

from sqlalchemy import text

from corral.store.engine import make_engine


async def main() -> None:
    engine = make_engine(sys.argv[1], idle_in_transaction_seconds=1)
    async with engine.connect() as connection:
        await connection.execute(text("SELECT n FROM probe WHERE id = 1 FOR UPDATE"))
        print("locked", flush=True)
        await asyncio.sleep(3600)


asyncio.run(main())
"""


async def test_a_frozen_holder_of_a_row_lock_lets_go_after_the_idle_limit(
    database_url: str, tmp_path: Path
) -> None:
    engine = make_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE probe (id int PRIMARY KEY, n int)"))
            await connection.execute(text("INSERT INTO probe VALUES (1, 0)"))
        script = tmp_path / "holder.py"
        script.write_text(HOLDER)
        holder = await asyncio.create_subprocess_exec(
            sys.executable, str(script), database_url, stdout=asyncio.subprocess.PIPE
        )
        try:
            assert holder.stdout is not None
            assert await holder.stdout.readline() == b"locked\n"
            holder.send_signal(signal.SIGSTOP)
            async with engine.begin() as connection:
                update = connection.execute(text("UPDATE probe SET n = 1 WHERE id = 1"))
                # Without the limit this waits for as long as the holder stays frozen.
                await asyncio.wait_for(update, 30)
        finally:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            await holder.communicate()
    finally:
        await engine.dispose()


async def test_every_connection_carries_the_idle_limit(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            shown = await connection.scalar(text("SHOW idle_in_transaction_session_timeout"))
    finally:
        await engine.dispose()
    assert shown == f"{round(IDLE_IN_TRANSACTION_SECONDS)}s"
