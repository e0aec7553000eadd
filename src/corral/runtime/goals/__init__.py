"""todos: one goal per cycle with fixed acceptance conditions, a todo list, a loop bound,
and the session ledger of closed cycles."""

from corral.runtime.goals.service import GOALS, Goals, goals_of
from corral.runtime.goals.state import GoalState, SetBy

__all__ = ["GOALS", "GoalState", "Goals", "SetBy", "goals_of"]
