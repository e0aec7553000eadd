"""A child process for the budget concurrency test: spends from one run's budget as a
second worker would, and says how many tool calls it was granted.

    python -m tests.runtime.budget_spender DATABASE_URL RUN_ID ATTEMPTS

It prints ``ready``, waits for a line on stdin (so two spenders start together), then tries
``ATTEMPTS`` tool calls, four at a time, charging one token with each attempt; it prints the
number of calls granted.
"""

from __future__ import annotations

import asyncio
import sys

from corral.runtime.budgets import BudgetStore, Spend
from corral.store import make_engine, make_sessionmaker

AT_ONCE = 4


async def main(database_url: str, run_id: str, attempts: int) -> None:
    engine = make_engine(database_url)
    store = BudgetStore(make_sessionmaker(engine))
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    granted = 0

    async def one() -> None:
        nonlocal granted
        await store.charge(run_id, Spend(total_tokens=1))
        if await store.reserve_call(run_id, "execute") is None:
            granted += 1

    for start in range(0, attempts, AT_ONCE):
        await asyncio.gather(*(one() for _ in range(min(AT_ONCE, attempts - start))))
    print(granted, flush=True)
    await engine.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
