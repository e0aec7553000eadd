"""The pipeline's ``budget`` stage: a tool-call limit refuses a call before it runs.

Placed right after ``approval`` (so right before the handler): only a call that will run is
counted, a call that waits for a person is counted once it is approved. The stage counts
the call against its run and every ancestor run in one locked transaction
(:meth:`BudgetStore.reserve_call`). It is in the chain only while a run of this process
has a budget (a switched stage): without budgets a dispatch pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable

from corral.errors import Refusal
from corral.runtime.budgets.store import BudgetStore
from corral.tools.call import ToolCall
from corral.tools.results import ToolResult
from corral.tools.stages import Next, StageContribution

__all__ = ["BudgetStage", "BudgetedRuns", "budget_stage"]


class BudgetedRuns:
    """The runs of this process that have a budget; the stage is engaged while any does."""

    def __init__(self) -> None:
        self._runs: set[str] = set()
        self._on_change: list[Callable[[], None]] = []

    def on_change(self, callback: Callable[[], None]) -> None:
        self._on_change.append(callback)

    def add(self, run_id: str) -> None:
        if run_id not in self._runs:
            self._runs.add(run_id)
            self._changed()

    def discard(self, run_id: str) -> None:
        if run_id in self._runs:
            self._runs.discard(run_id)
            self._changed()

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def __bool__(self) -> bool:
        return bool(self._runs)

    def _changed(self) -> None:
        for callback in self._on_change:
            callback()


class BudgetStage:
    name = "budget"

    def __init__(self, store: BudgetStore, runs: BudgetedRuns) -> None:
        self._store = store
        self._runs = runs

    def engaged(self) -> bool:
        return bool(self._runs)

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        run_id = call.request.run_id
        if run_id is None or run_id not in self._runs:
            return await next(call)
        refused = await self._store.reserve_call(run_id, call.tool.name)
        if refused is not None:
            raise Refusal(
                f"Refused by the run's budget: {refused}. The call did not run; finish with "
                "the tools and budget you have left, or ask the person for a larger budget",
                code="budget_exhausted",
            )
        return await next(call)


def budget_stage(store: BudgetStore, runs: BudgetedRuns) -> StageContribution:
    """The stage, placed right after ``approval``."""
    return StageContribution(BudgetStage(store, runs), after="approval")
