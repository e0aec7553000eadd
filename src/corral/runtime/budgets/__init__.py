"""Budgets: limits on what a run and its children may spend (see :mod:`.limits`)."""

from corral.runtime.budgets.effective import check_live_budgets, effective_budget
from corral.runtime.budgets.limits import Budget, Spend, parse_budget
from corral.runtime.budgets.stage import BudgetedRuns, budget_stage
from corral.runtime.budgets.store import BudgetStore, RunBudgetView

__all__ = [
    "Budget",
    "BudgetStore",
    "BudgetedRuns",
    "RunBudgetView",
    "Spend",
    "budget_stage",
    "check_live_budgets",
    "effective_budget",
    "parse_budget",
]
