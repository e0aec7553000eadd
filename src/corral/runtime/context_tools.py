"""Installing the services of ask_question, todos and compact_history on the runtime.

One of ``corral.platform.components.INSTALLERS``, right after the runtime: it registers the
three services (``platform.services["questions"|"goals"|"compactions"]``, which the
handlers reach through ``ctx.services``), the goal state block and the context map in the
system prompt, the compaction overlay on the history, and the run-end hook that closes the
questions of a run that ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select, update

from corral.runtime.compaction import COMPACTIONS, Compactions
from corral.runtime.goals import GOALS, Goals
from corral.runtime.questions import QUESTIONS, Questions
from corral.runtime.runs import TERMINAL
from corral.runtime.runtime import runtime_of
from corral.store import context_tables as ct
from corral.store import runtime_tables as rt_tables
from corral.store.tables import utcnow

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["install_context_tools"]


async def install_context_tools(platform: Platform) -> None:
    rt = runtime_of(platform)
    questions, goals, compactions = Questions(rt), Goals(rt), Compactions(rt)
    platform.services[QUESTIONS] = questions
    platform.services[GOALS] = goals
    platform.services[COMPACTIONS] = compactions
    rt.prompt.add_state_block(goals.block)
    rt.prompt.add_state_block(compactions.context_map)
    rt.prompt.add_overlay(compactions.overlay)
    rt.run_end_hooks.append(questions.close_for_run)
    await _close_orphaned_questions(platform)


async def _close_orphaned_questions(platform: Platform) -> None:
    """Runs that start-up recovery ended before the hook above existed leave no question
    open behind them."""
    ended = select(rt_tables.Run.id).where(rt_tables.Run.status.in_(list(TERMINAL)))
    async with platform.sessions.begin() as session:
        await session.execute(
            update(ct.Question)
            .where(ct.Question.status == "open", ct.Question.run_id.in_(ended))
            .values(status="closed", note="the run ended before an answer", answered_at=utcnow())
        )
