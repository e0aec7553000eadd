"""The decisions sweep: ends expired decisions and resumes runs whose answers came in.

Periodically (a host's loop; on a cluster the workers' periodic task) it

- ends every pending decision past its expiry (``expires_at``, else its creation plus the
  live setting ``decisions_expire_days``): an approval as a denial, a question as declined,
  each with the reason, and the waiting run goes on as after a denial;
- queues every parked run all of whose waits are answered but that never resumed (the
  process that recorded the answer died before it queued the run);
- runs the other sweeps it was given (``also``): the delegate tool's, which answers parent
  calls still waiting for delegate runs that ended.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from corral.errors import ApprovalDenied, ToolError, UsageError
from corral.kernel.decisions import DecisionRecord
from corral.runtime.parking import resolve_wait, resume_if_answered
from corral.runtime.periodic import Periodic
from corral.runtime.questions.elicitation import is_elicitation
from corral.runtime.questions.store import QuestionStore
from corral.store.tables import utcnow
from corral.tools.results import ToolResult

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["DecisionSweep", "Swept"]

log = logging.getLogger("corral.decisions")

SWEEP_SECONDS = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Swept:
    expired: tuple[str, ...]
    """The decisions ended as expired."""
    resumed: tuple[str, ...]
    """The parked runs queued again."""


class DecisionSweep:
    def __init__(
        self,
        rt: RunHost,
        *,
        interval: float = SWEEP_SECONDS,
        also: Sequence[Callable[[], Awaitable[object]]] = (),
    ) -> None:
        self._rt = rt
        self._periodic = Periodic(
            [("a decisions sweep", self.tick), *(("a sweep", sweep) for sweep in also)],
            interval=interval,
            log=log,
        )

    async def tick(self, now: datetime | None = None) -> Swept:
        rt = self._rt
        days = float((await rt.kernel.live_settings())["decisions_expire_days"])
        expired = []
        for record in await rt.kernel.approvals.decisions.expired(now or utcnow(), days):
            try:
                if await self._expire(record, days):
                    expired.append(record.id)
            except Exception:  # one bad record must not hold back the others
                log.exception("ending the expired decision %s failed", record.id)
        resumed = []
        for run in await rt.runs.list_runs(statuses=["parked"], limit=10_000):
            if await resume_if_answered(rt, run):
                log.warning("run %s had all its answers but never resumed; queued", run.id)
                resumed.append(run.id)
        return Swept(expired=tuple(expired), resumed=tuple(resumed))

    async def _expire(self, record: DecisionRecord, days: float) -> bool:
        rt = self._rt
        when = record.expiry(days).strftime("%Y-%m-%d %H:%M UTC")
        note = f"expired at {when} without an answer"
        if record.kind == "approval":
            if not await rt.kernel.approvals.expire(record.id, note):
                return False
            result = ToolResult.from_error(
                ApprovalDenied(
                    f"the call was denied: its approval {note}. Do not repeat it; continue "
                    "without it or ask what to do instead."
                ),
                status="denied",
            )
            await rt.kernel.approvals.store_result(record.id, result.to_json())
            card: dict[str, object] = {"card": "decided", "decision": "deny", "by": None}
        elif record.kind == "question":
            store = QuestionStore(rt.kernel.sessions, rt.kernel.approvals.decisions)
            if not await store.expire(record.id, note):
                return False
            result = ToolResult.from_error(
                ToolError(
                    f"the question was declined: it {note}. Go on with your best judgement "
                    "and say what you assumed.",
                    code="question_expired",
                ),
                status="denied",
            )
            card = {"card": "answered", "by": None, "answers": []}
        else:  # a kind this version does not know how to end: left to its own code
            return False
        # An MCP server's question has no wait in the run: its call (if alive) was told.
        waits = record.call_id is not None and not is_elicitation(record.call_id)
        if record.run_id is not None and record.call_id is not None and waits:
            data: dict[str, object] = {
                **card,
                "surface": None,
                "wait": {"kind": record.kind, "id": record.id},
                "note": note,
                "expired": True,
            }
            with contextlib.suppress(UsageError):  # its run ended meanwhile
                await resolve_wait(rt, record.run_id, record.call_id, result, card=data)
        return True

    def start(self) -> None:
        self._periodic.start()

    async def close(self) -> None:
        await self._periodic.close()
