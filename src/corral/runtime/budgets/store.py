"""Budgets in the store: each run's limits and spend, charged up its chain of ancestors.

A run with a budget has a ``run_budgets`` row; ``charged_to`` names the nearest ancestor
run with one. Every charge (a model response's usage, a tool call about to run) is added to
the run's row and to every ancestor's, in one transaction holding those rows: on
PostgreSQL ``SELECT … FOR UPDATE`` in run id order (so two workers charging one parent never
deadlock and never both take its last call); on SQLite the transaction first writes the
run's own row, which takes the database's single write lock before anything is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.runtime.appends import write
from corral.runtime.budgets.limits import (
    Budget,
    Spend,
    describe,
    parse_budget,
    reached,
    remaining,
    tightest,
)
from corral.store import budget_tables as bt
from corral.store.meta_reads import MetaReader
from corral.store.tables import utcnow

__all__ = ["BudgetStore", "RunBudgetView"]

MAX_DEPTH = 32
"""Ancestors followed at most (delegation depth is far below it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunBudgetView:
    run_id: str
    charged_to: str | None
    limits: Budget
    spent: Spend
    exhausted: str

    @classmethod
    def of(cls, row: bt.RunBudget) -> RunBudgetView:
        return cls(
            run_id=row.run_id,
            charged_to=row.charged_to,
            limits=parse_budget(row.limits),
            spent=Spend.from_json(row.spent),
            exhausted=row.exhausted,
        )

    def usage(self) -> dict[str, dict[str, float]]:
        """Spent against limit, for each limit that is set."""
        spent = self.spent.to_json()
        pairs: dict[str, dict[str, float]] = {
            name: {"spent": spent[name], "limit": limit}
            for name, limit in self.limits.to_json().items()
            if name != "per_tool"
        }
        for tool, limit in self.limits.per_tool.items():
            pairs[f"per_tool.{tool}"] = {"spent": self.spent.per_tool.get(tool, 0), "limit": limit}
        return pairs

    def to_json(self) -> dict[str, object]:
        return {
            "limits": self.usage(),
            "spent": self.spent.to_json(),
            "charged_to": self.charged_to,
            "exhausted": self.exhausted or None,
        }

    def line(self) -> str:
        """One line of spent/limit pairs, e.g. ``total_tokens 1200/5000 · per_tool.execute
        3/40``."""
        return " · ".join(
            f"{name} {pair['spent']:g}/{pair['limit']:g}" for name, pair in self.usage().items()
        )


_CONVERSATION_BUDGET = "SELECT 1 FROM conversation_budgets WHERE conversation_id = ?"
_RUN_BUDGET = "SELECT 1 FROM run_budgets WHERE run_id = ?"


class BudgetStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], reader: MetaReader | None = None
    ) -> None:
        self._sessions = sessions
        self._reader = reader
        """Answers on the calling thread whether a budget row exists: every run's start asks,
        and most have none."""

    def _none_found(self, sql: str, key: str) -> bool:
        return self._reader is not None and self._reader.exists(sql, (key,)) is False

    # -- conversations ------------------------------------------------------------------------

    async def conversation_budget(self, conversation_id: str) -> Budget:
        return (await self.conversation_terms(conversation_id))[0]

    async def conversation_terms(self, conversation_id: str) -> tuple[Budget, str | None]:
        """The conversation's budget and the run its runs are charged to (if any)."""
        if self._none_found(_CONVERSATION_BUDGET, conversation_id):
            return Budget(), None
        async with self._sessions() as session:
            row = await session.get(bt.ConversationBudget, conversation_id)
        if row is None:
            return Budget(), None
        return parse_budget(row.limits), row.charged_to

    async def set_conversation_budget(
        self,
        conversation_id: str,
        budget: Budget,
        *,
        set_by: str,
        charged_to: str | None = None,
    ) -> None:
        """Set (an empty budget: clear) the budget of a conversation's later runs; the run
        they are charged to is kept when ``charged_to`` is None."""
        async with self._sessions.begin() as session:
            row = await session.get(bt.ConversationBudget, conversation_id)
            kept = charged_to or (row.charged_to if row is not None else None)
            await session.execute(
                delete(bt.ConversationBudget).where(
                    bt.ConversationBudget.conversation_id == conversation_id
                )
            )
            if not budget.empty or kept is not None:
                session.add(
                    bt.ConversationBudget(
                        conversation_id=conversation_id,
                        limits=budget.to_json(),
                        set_by=set_by,
                        charged_to=kept,
                        updated_at=utcnow(),
                    )
                )

    # -- runs ---------------------------------------------------------------------------------

    async def find(self, run_id: str) -> RunBudgetView | None:
        if self._none_found(_RUN_BUDGET, run_id):
            return None
        async with self._sessions() as session:
            row = await session.get(bt.RunBudget, run_id)
        return RunBudgetView.of(row) if row is not None else None

    async def find_many(self, run_ids: Sequence[str]) -> dict[str, RunBudgetView]:
        if not run_ids:
            return {}
        async with self._sessions() as session:
            rows = await session.scalars(
                select(bt.RunBudget).where(bt.RunBudget.run_id.in_(list(run_ids)))
            )
            return {row.run_id: RunBudgetView.of(row) for row in rows}

    async def left_for_child(self, parent_run_id: str | None) -> Budget | None:
        """At most what a child of ``parent_run_id`` may spend: the tightest remainder along
        the parent's chain; None when no ancestor has a budget."""
        if parent_run_id is None:
            return None
        async with self._sessions() as session:
            chain = await _chain(session, parent_run_id)
        if not chain:
            return None
        return tightest(remaining(row.limits, row.spent) for row in chain)

    async def open_run(self, run_id: str, *, charged_to: str | None, limits: Budget) -> None:
        """Give ``run_id`` its budget row (kept as it is when it has one: a resumed run)."""

        async def work(session: AsyncSession) -> None:
            if await session.get(bt.RunBudget, run_id) is not None:
                return
            session.add(
                bt.RunBudget(
                    run_id=run_id,
                    charged_to=charged_to,
                    limits=limits.to_json(),
                    spent=Spend().to_json(),
                    exhausted="",
                    updated_at=utcnow(),
                )
            )

        await write(self._sessions, work)

    async def reserve_call(self, run_id: str, tool: str) -> str | None:
        """Count one call of ``tool`` against the run and its ancestors, or refuse it: the
        refusal names the limit and what was spent (nothing is counted then)."""
        spend = Spend(tool_calls=1, per_tool={tool: 1})

        async def work(session: AsyncSession) -> str | None:
            chain = await _locked_chain(session, run_id)
            for row in chain:
                view = RunBudgetView.of(row)
                why = _call_refused(view, tool)
                if why is not None:
                    return why if row.run_id == run_id else f"{why}, of parent run {row.run_id}"
            for row in chain:
                row.spent = Spend.from_json(row.spent).plus(spend).to_json()
            return None

        return await write(self._sessions, work)

    async def charge(
        self, run_id: str, spend: Spend, *, wall_seconds: float | None = None
    ) -> str | None:
        """Add ``spend`` to the run and its ancestors, and set the run's own wall time to
        ``wall_seconds`` when given (a child runs alongside its parent: its time is not
        added to the parent's, it is bounded by what the parent had left when it started);
        the first run-wide limit now reached along the chain, in words, or None."""

        async def work(session: AsyncSession) -> str | None:
            chain = await _locked_chain(session, run_id)
            found: str | None = None
            for row in chain:
                spent = Spend.from_json(row.spent).plus(spend)
                if wall_seconds is not None and row.run_id == run_id:
                    spent = replace(spent, wall_seconds=wall_seconds)
                row.spent = spent.to_json()
                why = reached(parse_budget(row.limits), spent)
                if why is not None and found is None:
                    found = why if row.run_id == run_id else f"{why}, of parent run {row.run_id}"
            return found

        return await write(self._sessions, work)

    async def reached(self, run_id: str) -> str | None:
        """The first run-wide limit reached along the run's chain (a sibling may have spent
        the parent's last tokens), or None."""
        async with self._sessions() as session:
            chain = await _chain(session, run_id)
        for row in chain:
            why = reached(row.limits, row.spent)
            if why is not None:
                return why if row.run_id == run_id else f"{why}, of parent run {row.run_id}"
        return None

    async def mark_exhausted(self, run_id: str, why: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(bt.RunBudget)
                .where(bt.RunBudget.run_id == run_id)
                .values(exhausted=why, updated_at=utcnow())
            )


def _call_refused(view: RunBudgetView, tool: str) -> str | None:
    limit = view.limits.per_tool.get(tool)
    used = view.spent.per_tool.get(tool, 0)
    if limit is not None and used + 1 > limit:
        return f"the limit of {limit} calls of {tool!r} is used up ({used} made)"
    total = view.limits.tool_calls
    if total is not None and view.spent.tool_calls + 1 > total:
        return describe("tool_calls", view.spent.tool_calls, total) + " is used up"
    return None


async def _chain_ids(session: AsyncSession, run_id: str) -> list[str]:
    ids: list[str] = []
    current: str | None = run_id
    while current is not None and current not in ids and len(ids) < MAX_DEPTH:
        found = (
            await session.execute(
                select(bt.RunBudget.run_id, bt.RunBudget.charged_to).where(
                    bt.RunBudget.run_id == current
                )
            )
        ).first()
        if found is None:
            break
        ids.append(found[0])
        current = found[1]
    return ids


async def _chain(session: AsyncSession, run_id: str) -> list[RunBudgetView]:
    ids = await _chain_ids(session, run_id)
    if not ids:
        return []
    rows = await session.scalars(select(bt.RunBudget).where(bt.RunBudget.run_id.in_(ids)))
    by_id = {row.run_id: RunBudgetView.of(row) for row in rows}
    return [by_id[i] for i in ids if i in by_id]


async def _locked_chain(session: AsyncSession, run_id: str) -> list[bt.RunBudget]:
    """The run's row and its ancestors', held until the transaction ends (run first)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    if not postgres:  # the first write takes SQLite's one write lock: the reads below are fresh
        await session.execute(
            update(bt.RunBudget).where(bt.RunBudget.run_id == run_id).values(updated_at=utcnow())
        )
    ids = await _chain_ids(session, run_id)
    if not ids:
        return []
    query = select(bt.RunBudget).where(bt.RunBudget.run_id.in_(ids))
    if postgres:
        query = query.order_by(bt.RunBudget.run_id).with_for_update()
    rows = await session.scalars(query.execution_options(populate_existing=True))
    by_id = {row.run_id: row for row in rows}
    return [by_id[i] for i in ids if i in by_id]
