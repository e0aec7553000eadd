"""What the agent loop does with a run's budget: open it when the run starts, charge each
model response, tell when a limit is reached."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai.messages import ModelResponse

from corral.runtime.budgets.effective import effective_budget
from corral.runtime.budgets.limits import Budget, Spend
from corral.runtime.budgets.pricing import cost_usd, unpriced
from corral.runtime.budgets.store import BudgetStore

__all__ = ["BudgetKeeper", "Unpriced", "open_budget"]


class Unpriced(Exception):
    """A cost limit applies, but the run's model has no known price."""


class BudgetKeeper:
    """One run's budget while the loop runs it."""

    def __init__(
        self,
        store: BudgetStore,
        run_id: str,
        model: str,
        limits: Budget,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.model = model
        self.limits = limits
        self.clock = clock
        """The run's running seconds so far (its wall time, recorded with each charge)."""

    async def reached(self) -> str | None:
        return await self.store.reached(self.run_id)

    async def close(self) -> str:
        """Record the run's wall time as it ends; spent against limit, one line (see
        :meth:`RunBudgetView.line`)."""
        if self.clock is not None:
            await self.store.charge(self.run_id, Spend(), wall_seconds=self.clock())
        view = await self.store.find(self.run_id)
        return view.line() if view is not None else ""

    async def charge(self, response: ModelResponse) -> str | None:
        """Charge one response's usage (and its cost) up the chain; the limit reached, if
        one is."""
        usage = response.usage
        cost = cost_usd(self.model, usage.input_tokens, usage.output_tokens)
        spend = Spend(
            requests=1,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
            cost_usd=cost or 0.0,
        )
        wall = self.clock() if self.clock is not None else None
        return await self.store.charge(self.run_id, spend, wall_seconds=wall)


async def open_budget(
    store: BudgetStore,
    live: Mapping[str, Any],
    *,
    run_id: str,
    parent_run_id: str | None,
    conversation_id: str,
    agent: str,
    profile: str,
    model: str,
    clock: Callable[[], float] | None = None,
) -> BudgetKeeper | None:
    """The keeper of the run's budget (its row made on first start), or None when no budget
    applies; :class:`Unpriced` when a cost limit applies that cannot be checked."""
    found = await store.find(run_id)
    if found is not None:
        limits = found.limits
    else:
        conversation, charged_to = await store.conversation_terms(conversation_id)
        parent_run_id = parent_run_id or charged_to
        parent_left = await store.left_for_child(parent_run_id)
        limits = effective_budget(
            live,
            agent=agent,
            profile=profile,
            conversation=conversation,
            parent_left=parent_left,
        )
        if limits.empty:
            return None
        if limits.cost_usd is not None:
            why = unpriced(model)
            if why is not None:
                raise Unpriced(why)
        charged_to = parent_run_id if parent_left is not None else None
        await store.open_run(run_id, charged_to=charged_to, limits=limits)
    return BudgetKeeper(store, run_id, model, limits, clock)
