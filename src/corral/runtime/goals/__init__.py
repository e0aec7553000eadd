"""todos: one goal per cycle with fixed acceptance conditions, a todo list, a loop bound,
and the session ledger of closed cycles."""

from corral.runtime.goals.service import Goals
from corral.runtime.goals.state import GoalState, SetBy

__all__ = ["GoalState", "Goals", "SetBy"]
