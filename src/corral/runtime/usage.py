"""Model use that tools spend on a conversation's behalf: recorded in the platform log and
charged to the run's budget, as the run's own model turns are.

Implements :class:`corral.service_protocols.UsageRecorder` (``ctx.services.usage``); the
loop's own model turns carry their usage on their ``model_turn`` rows and are charged by the
loop (:class:`corral.runtime.budgets.keeper.BudgetKeeper`).
"""

from __future__ import annotations

from corral.kernel.logs import LogStore
from corral.runtime.budgets.limits import Spend
from corral.runtime.budgets.pricing import cost_usd
from corral.runtime.budgets.store import BudgetStore
from corral.service_protocols import UsageRecord

__all__ = ["UsageLog", "spend_of"]


class UsageLog:
    def __init__(self, logs: LogStore, budgets: BudgetStore) -> None:
        self._logs = logs
        self._budgets = budgets

    async def record(self, usage: UsageRecord) -> None:
        await self._logs.write(
            "usage",
            {
                "source": usage.source,
                "model": usage.model,
                "user_id": usage.user_id,
                "conversation_id": usage.conversation_id,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": usage.requests,
                "fee_usd": usage.fee_usd,
                "details": dict(usage.details),
            },
            run_id=usage.run_id,
        )
        if usage.run_id is not None:
            # A run without a budget has no row: the charge then changes nothing. A limit
            # this reaches ends the run at its next model turn, as the loop checks then.
            await self._budgets.charge(usage.run_id, spend_of(usage))


def spend_of(usage: UsageRecord) -> Spend:
    """What ``usage`` costs a budget: its tokens and requests, priced, plus its fees."""
    tokens = usage.input_tokens + usage.output_tokens
    priced = cost_usd(usage.model, usage.input_tokens, usage.output_tokens) if tokens else 0.0
    return Spend(
        requests=usage.requests,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=tokens,
        cost_usd=(priced or 0.0) + usage.fee_usd,
    )
