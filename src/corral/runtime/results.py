"""What a chat turn or any run hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corral.runtime.runs import RunRecord, RunStatus, Wait
from corral.runtime.timeline import TimelineRow

__all__ = ["ChatTurn", "RunResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """Where a run stands after it returned: finished, parked, stopped, failed or partial."""

    run_id: str
    conversation_id: str
    status: RunStatus
    reason: str | None
    detail: str
    steps: int
    text: str
    """The model's last words in this run ("" when it said nothing)."""
    waiting: tuple[Wait, ...]
    rows: tuple[TimelineRow, ...]
    """The rows this run added to the timeline."""

    @property
    def approvals(self) -> list[str]:
        """Ids of the approvals a parked run waits for."""
        return [w.id for w in self.waiting if w.kind == "approval"]

    @property
    def questions(self) -> list[str]:
        """Ids of the questions a parked run waits for."""
        return [w.id for w in self.waiting if w.kind == "question"]

    @classmethod
    def of(cls, run: RunRecord, rows: list[TimelineRow]) -> RunResult:
        mine = tuple(r for r in rows if r.run_id == run.id)
        turns = [r for r in mine if r.kind == "model_turn" and r.data.get("text")]
        return cls(
            run_id=run.id,
            conversation_id=run.conversation_id,
            status=run.status,
            reason=run.reason,
            detail=run.detail,
            steps=run.steps,
            text=str(turns[-1].data["text"]) if turns else "",
            waiting=run.waiting,
            rows=mine,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "conversation_id": self.conversation_id,
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
            "steps": self.steps,
            "text": self.text,
            "waiting": [w.to_json() for w in self.waiting],
            "rows": [r.to_json() for r in self.rows],
        }


ChatTurn = RunResult
"""A chat turn is a run started by a user message."""
