"""Budgets on PostgreSQL: two processes spending from one parent's budget at once never
take more than its limit, and lose no charge (the chain's rows are held FOR UPDATE)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import corral
from corral.policy.profiles import parse_profile
from corral.runtime.budgets import Budget
from corral.runtime.runs import new_run_id, run_row
from corral.runtime.runtime import Runtime
from corral.tools.context import Narrowing

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 40
ATTEMPTS = 35


async def _run(rt: Runtime, conversation_id: str, user_id: str, parent: str | None) -> str:
    run_id = new_run_id()
    row = run_row(
        run_id=run_id,
        conversation_id=conversation_id,
        user_id=user_id,
        agent="default",
        model="script:x",
        profile=parse_profile("auto"),
        narrowing=Narrowing(),
        trigger="user_message",
        hop=0,
        step_budget=10,
        wall_clock_limit_s=60.0,
        kind="delegate" if parent else "chat",
        parent_run_id=parent,
    )
    async with rt.kernel.sessions.begin() as session:
        session.add(row)
    return run_id


async def _spender(database_url: str, run_id: str) -> asyncio.subprocess.Process:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.runtime.budget_spender",
        database_url,
        run_id,
        str(ATTEMPTS),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    assert await child.stdout.readline() == b"ready\n"
    return child


async def test_two_workers_spending_from_one_parent_never_exceed_its_limit(
    data_dir: Path, database_url: str
) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation()
        user = conversation.owner_id
        parent = await _run(rt, conversation.id, user, None)
        await rt.budgets.open_run(
            parent, charged_to=None, limits=Budget(tool_calls=LIMIT, total_tokens=1000)
        )
        children = []
        for _ in range(2):
            child = await _run(rt, conversation.id, user, parent)
            left = await rt.budgets.left_for_child(parent)
            assert left == Budget(tool_calls=LIMIT, total_tokens=1000, per_tool={})
            await rt.budgets.open_run(child, charged_to=parent, limits=left)
            children.append(child)
        spenders = [await _spender(database_url, child) for child in children]
        for spender in spenders:  # both go at once
            assert spender.stdin is not None
            spender.stdin.write(b"go\n")
            await spender.stdin.drain()
        granted = []
        for spender in spenders:
            out, _ = await spender.communicate()
            assert spender.returncode == 0
            granted.append(int(out))
        assert sum(granted) == LIMIT, granted
        assert min(granted) > 0  # both really spent from the parent
        mine = await rt.budgets.find(parent)
        assert mine is not None
        assert mine.spent.tool_calls == LIMIT and mine.spent.per_tool == {"execute": LIMIT}
        assert mine.spent.total_tokens == 2 * ATTEMPTS  # no charge lost to a race
        views = await rt.budgets.find_many(children)
        assert [views[c].spent.tool_calls for c in children] == granted
