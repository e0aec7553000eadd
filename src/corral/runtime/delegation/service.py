"""The ``delegate`` tool's service: a child run with its own loop, narrow-only reach.

The child runs in a conversation of its own, tied to the parent call by a ``delegations``
row. In the foreground the call waits for the child; if the child parks (one of its own
tools needs approval), the parent call returns a typed wait on the child and the parent run
parks too, holding nothing open. When the child ends, its answer reaches the parent call
exactly once (whichever side gets there first claims ``delivered``), and the parent resumes.
A subagent's own ``background: true`` child runs in the foreground, and the result says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, select, update

from corral.errors import CorralError, InvalidArguments, NotFound, ToolError, UsageError
from corral.policy.profiles import stricter
from corral.runtime.agents import load_agent
from corral.runtime.budgets import parse_budget
from corral.runtime.conversations import ConversationInfo
from corral.runtime.delegation.answer import clip_both_ends, last_substantive_text
from corral.runtime.delegation.reach import Reach, child_reach
from corral.runtime.delegation.transcript import RunFolder
from corral.runtime.hooks import added_context
from corral.runtime.parking import resolve_wait
from corral.runtime.runs import ACTIVE, TERMINAL, RunRecord
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from corral.runtime.turns import TurnSpec, start_turn, turn_spec
from corral.store import delegation_tables as dt
from corral.store import runtime_tables as rt_tables
from corral.store.locks import held_lock
from corral.store.outages import database_unavailable
from corral.tools.results import ToolResult
from corral.tools.selection import AgentSelection
from corral.tools.services import DelegateScope

__all__ = ["Delegation"]

log = logging.getLogger("corral.runtime")

_RETRY_FIRST_SECONDS = 0.5
_RETRY_MOST_SECONDS = 30.0
"""The back-off of a delegate run's end retried after a database outage."""

TIMEOUT_MS_MAX = 1_680_000
STEPS_MAX = 200


_ACTIVE_CHILD = (
    "SELECT 1 FROM runs WHERE parent_run_id = ? AND status IN "
    f"({', '.join(repr(status) for status in sorted(ACTIVE))})"
)


class Delegation:
    def __init__(self, runtime: Runtime, *, hooked: bool = True) -> None:
        self._rt = runtime
        self._reports = runtime.reports
        self._growing: dict[str, str] = {}
        """Child conversations running in this process → their parent conversation."""
        self._settling: set[asyncio.Task[None]] = set()
        """Delegate runs' ends retried after a database outage."""
        if hooked:  # else who built it passes the runtime's calls on (built on first need)
            runtime.run_end_hooks.append(self._on_run_end)
            runtime.row_observers.append(self._grow_transcript)

    # -- the tool -----------------------------------------------------------------------------

    async def delegate(self, args: Mapping[str, Any], ctx: DelegateScope) -> ToolResult:
        rt = self._rt
        if ctx.run_id is None or ctx.conversation_id is None:
            raise ToolError(
                "delegate runs a subagent for a conversation's run; call it from a chat turn",
                code="not_available",
            )
        parent = await rt.runs.get(ctx.run_id)
        parent_conversation = await rt.conversations.get(ctx.conversation_id)
        agent_name = str(args.get("agent") or ctx.agent)
        try:
            agent = await load_agent(rt.kernel.sessions, agent_name)
        except NotFound as exc:
            raise InvalidArguments(str(exc)) from None
        state = await rt.kernel.config.dispatch_state()
        reach = child_reach(
            parent_visible=await rt.visible_tools(parent, ctx.caller),
            parent_narrowing=ctx.narrowing,
            agent=state.agents.get(agent_name) or AgentSelection(agent=agent_name, mode="all"),
            tools=args.get("tools"),
            blocked_tools=args.get("blocked_tools") or (),
            disabled_packages=args.get("disabled_packages") or (),
        )
        if reach.empty:
            raise InvalidArguments(
                "none of the tools you named can go to the subagent, so no subagent was "
                f"started. {reach.describe()} Name tools from your own tool list, or omit "
                "'tools' to give it your full set.",
                data={"tools": reach.to_json()},
            )
        model = str(
            args.get("model") or (agent.model if args.get("agent") else None) or parent.model
        )
        try:
            rt.models.resolve(model)
        except CorralError as exc:
            raise InvalidArguments(f"model {model!r} cannot be used: {exc}") from None
        notes = []
        background = bool(args.get("background")) and not ctx.narrowing.subagent
        if args.get("background") and ctx.narrowing.subagent:
            notes.append(
                "background: true is for the top level only; this subagent's own subagent ran "
                "in the foreground and its answer is below."
            )
        await asyncio.to_thread(RunFolder.prepare, rt.kernel.settings, ctx.conversation_id)
        if background:
            # Counted and started as one step on every worker: the limit holds cluster-wide.
            async with held_lock(rt.kernel.engine, f"delegate-background:{ctx.caller.user_id}"):
                await self._check_background_room(ctx.caller.user_id)
                child, started = await self._start_child(
                    args, ctx, agent.name, model, parent, parent_conversation, reach
                )
        else:
            child, started = await self._start_child(
                args, ctx, agent.name, model, parent, parent_conversation, reach
            )
        run, opening_rows = started
        # From here the transcript grows as the child stores rows: a mid-run read shows work.
        self._growing[child.id] = ctx.conversation_id
        try:
            RunFolder(rt.kernel.settings, ctx.conversation_id, run.id).append(opening_rows)
        except (OSError, ToolError):  # swapped for a link since prepare(): the store has them
            log.exception("could not start the transcript of run %s", run.id)
        if background:
            return await self._detached(run, ctx.conversation_id, reach.describe())
        unregister = ctx.cancellation.on_cancel(lambda: self._stop_child(run.id))
        try:
            async with rt.jobs.lending():  # the parent only waits: its slot is the child's
                settled = await rt.wait_run(run.id)
        finally:
            unregister()
        if settled.status in TERMINAL:
            await self._claim(child.id)
            return await self._answer(settled, reach.describe(), notes)
        await self._parent_waits(child.id)
        settled = await rt.runs.get(run.id)
        if settled.status in TERMINAL and await self._claim(child.id):
            return await self._answer(settled, reach.describe(), notes)
        asks = ", ".join(f"{w.kind} {w.id} for {w.tool!r}" for w in settled.waiting)
        return ToolResult.wait_for(
            "delegate",
            run.id,
            f"Subagent run {run.id} is waiting for {asks or 'an answer'}; this call resumes "
            "with its answer once a person decides.",
            data={
                "run_id": run.id,
                "conversation_id": child.id,
                "waiting": [w.to_json() for w in settled.waiting],
                "tools": reach.to_json(),
            },
        )

    async def _start_child(
        self,
        args: Mapping[str, Any],
        ctx: DelegateScope,
        agent_name: str,
        model: str,
        parent: RunRecord,
        parent_conversation: ConversationInfo,
        reach: Reach,
    ) -> tuple[ConversationInfo, tuple[RunRecord, list[TimelineRow]]]:
        """Create the child's conversation and delegation row and queue its first turn."""
        rt = self._rt
        assert ctx.run_id is not None and ctx.conversation_id is not None
        background = bool(args.get("background")) and not ctx.narrowing.subagent
        task = str(args["task"])
        context = str(args.get("context") or "").strip()
        try:
            budget = parse_budget(args.get("budget"), where="budget")
        except UsageError as exc:
            raise InvalidArguments(str(exc)) from None
        child = await rt.conversations.create(
            owner_id=ctx.caller.user_id,
            agent=agent_name,
            profile=parent_conversation.profile,
            model=model,
            title=task[:120],
        )
        if not budget.empty:  # the child's runs get at most it (and the parent's remainder)
            await rt.budgets.set_conversation_budget(child.id, budget, set_by=ctx.caller.user_id)
        async with rt.kernel.sessions.begin() as session:
            session.add(
                dt.Delegation(
                    conversation_id=child.id,
                    parent_conversation_id=ctx.conversation_id,
                    parent_run_id=ctx.run_id,
                    parent_call_id=ctx.call_id,
                    user_id=ctx.caller.user_id,
                    task=task,
                    background=background,
                    parent_waits=False,
                    delivered=False,
                    reach=reach.to_json(),
                )
            )
        spec = TurnSpec(
            conversation_id=child.id,
            user_id=ctx.caller.user_id,
            agent=agent_name,
            model=model,
            profile=parent.profile,
            trigger="message",
            hop=parent.hop,
            step_budget=min(int(args.get("max_steps") or STEPS_MAX), STEPS_MAX),
            wall_clock_limit_s=min(int(args.get("timeout_ms") or TIMEOUT_MS_MAX), TIMEOUT_MS_MAX)
            / 1000,
            narrowing=reach.narrowing,
            kind="delegate",
            parent_run_id=ctx.run_id,
        )
        opening = f"{context}\n\n{task}" if context else task
        data: dict[str, Any] = {"text": opening}
        added = await added_context(
            rt.hooks,
            "SubagentStart",
            {"session_id": child.id, "agent_id": child.id, "agent_type": agent_name},
        )
        if added:
            data["hook_context"] = added
        started = await start_turn(
            rt, spec, [NewRow(kind="user_message", user_id=ctx.caller.user_id, data=data)]
        )
        if started is None:  # a brand-new conversation cannot be busy
            raise ToolError("the subagent could not start", code="delegate_failed")
        return child, started

    async def _check_background_room(self, user_id: str) -> None:
        limit = int((await self._rt.kernel.live_settings())["delegate_background_max"])
        c, r = dt.Delegation, rt_tables.Run
        active = (
            select(func.count(func.distinct(c.conversation_id)))
            .join(r, r.conversation_id == c.conversation_id)
            .where(c.user_id == user_id, c.background.is_(True), r.status.in_(list(ACTIVE)))
        )
        async with self._rt.kernel.sessions() as session:
            running = int(await session.scalar(active) or 0)
        if running >= limit:
            raise ToolError(
                f"{running} background subagent runs are already in flight (the live setting "
                f"delegate_background_max is {limit}); wait for one to report, or run this one "
                "in the foreground (background: false)",
                code="delegate_background_limit",
                data={"running": running, "limit": limit},
            )

    async def _detached(
        self, run: RunRecord, parent_conversation_id: str, reach: str | None
    ) -> ToolResult:
        folder = RunFolder(self._rt.kernel.settings, parent_conversation_id, run.id)
        try:
            await folder.write_meta({**run_meta(run), "status": "running"})
        except (OSError, ToolError):  # the run has started: its status is in the store
            log.exception("could not write the status of run %s", run.id)
        lines = [
            f"Started background subagent run {run.id}. It keeps working after this turn; "
            "when it ends, its answer arrives in this conversation as a report by itself. "
            "There is nothing to poll: continue with other work or end your turn.",
            f"Status: {folder.status_uri} · transcript: {folder.transcript_uri}",
        ]
        if reach:
            lines.append(reach)
        return ToolResult.text_result(
            "\n".join(lines),
            data={
                "run_id": run.id,
                "conversation_id": run.conversation_id,
                "status": "running",
                "status_uri": folder.status_uri,
                "transcript_uri": folder.transcript_uri,
                "background": True,
            },
        )

    def _grow_transcript(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        parent = self._growing.get(conversation_id)
        if parent is None:
            return
        for run_id in dict.fromkeys(r.run_id for r in rows if r.run_id):
            mine = [r for r in rows if r.run_id == run_id]
            try:
                RunFolder(self._rt.kernel.settings, parent, run_id).append(mine)
            except (OSError, ToolError):  # a link planted meanwhile: the store keeps the rows
                log.exception("could not add to the transcript of run %s", run_id)

    # -- answers ------------------------------------------------------------------------------

    async def _answer(self, run: RunRecord, reach: str | None, notes: list[str]) -> ToolResult:
        rt = self._rt
        delegation = await self._delegation(run.conversation_id)
        folder = RunFolder(rt.kernel.settings, delegation.parent_conversation_id, run.id)
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
        live = await rt.kernel.live_settings()
        text = clip_both_ends(
            last_substantive_text(rows),
            int(live["delegate_answer_cap_chars"]),
            folder.transcript_uri,
        )
        lines: list[str] = []
        if run.status == "partial":
            lines.append(
                f"Partial answer: the subagent was cut off ({run.detail}); it did not write a "
                "conclusion, so treat what follows as unfinished."
            )
        elif run.status != "finished":
            lines.append(f"The subagent run {run.status}: {run.detail or run.reason}.")
        lines += notes
        if reach:
            lines.append(reach)
        lines.append(text or "(the subagent wrote no answer)")
        lines.append(
            f"[subagent run {run.id} · {run.steps} steps · transcript {folder.transcript_uri}]"
        )
        failed = run.status in ("failed", "stopped")
        return ToolResult.text_result(
            "\n\n".join(lines),
            is_error=failed,
            error_code=f"delegate_{run.status}" if failed else None,
            status="stopped" if run.status == "stopped" else ("error" if failed else "ok"),
            data={
                "run_id": run.id,
                "conversation_id": run.conversation_id,
                "status": run.status,
                "steps": run.steps,
                "status_uri": folder.status_uri,
                "transcript_uri": folder.transcript_uri,
            },
        )

    async def _on_run_end(self, run: RunRecord, status: str) -> None:
        """Stop the children of any run that ended; persist a delegate run's folder and give
        its answer to a parent call that waits for it (retried after a database outage)."""
        try:  # a hook must never break the run's ending
            await self._stop_children(run, status)
        except Exception:
            log.exception(
                "run %s ended, but the subagent runs it waited for were not stopped", run.id
            )
        if run.kind != "delegate":
            return
        self._growing.pop(run.conversation_id, None)
        settling = _Settling(run.id, run.conversation_id)
        try:
            await self._settle(settling)
        except Exception as exc:
            if not database_unavailable(exc):
                log.exception("delegate run %s ended, but its parent could not be answered", run.id)
                return
            log.warning(
                "delegate run %s ended during a database outage; its parent is answered once "
                "the database is back",
                run.id,
            )
            self._retry(settling)

    def _retry(self, settling: _Settling) -> None:
        task = asyncio.create_task(self._settle_later(settling))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle(self, settling: _Settling) -> None:
        """The steps of a delegate run's end; each done step is not done again on a retry."""
        delegation = await self._delegation(settling.conversation_id)
        ended = await self._rt.runs.get(settling.run_id)
        if not settling.persisted:
            await self._persist(delegation, ended)
            settling.persisted = True
        if delegation.background:
            await self._report(delegation, ended)
        elif delegation.parent_waits:
            if not settling.claimed:
                settling.claimed = await self._claim(settling.conversation_id)
                if not settling.claimed:
                    return  # another process answered the parent
            result = await self._answer(ended, None, [])
            await resolve_wait(
                self._rt, delegation.parent_run_id, delegation.parent_call_id, result
            )

    async def _settle_later(self, settling: _Settling) -> None:
        pause = _RETRY_FIRST_SECONDS
        while True:
            await asyncio.sleep(pause)  # a back-off between tries, not a synchronisation
            try:
                await self._settle(settling)
            except Exception as exc:
                if database_unavailable(exc):
                    pause = min(pause * 2, _RETRY_MOST_SECONDS)
                    continue
                log.exception(
                    "delegate run %s ended, but its parent could not be answered", settling.run_id
                )
                return
            log.info("delegate run %s: its parent was answered after the outage", settling.run_id)
            return

    async def sweep(self) -> list[str]:
        """Answer the parent calls still waiting for delegate runs that ended: the process
        that ended one met a database outage and closed or died before it could answer.
        Returns the ids of the runs whose parents were answered now."""
        d = dt.Delegation
        async with self._rt.kernel.sessions() as session:
            found = await session.scalars(
                select(d.conversation_id).where(
                    d.parent_waits.is_(True), d.delivered.is_(False), d.background.is_(False)
                )
            )
            conversations = list(found)
        answered: list[str] = []
        for conversation_id in conversations:
            latest = await self._rt.runs.list_runs(conversation_id=conversation_id, limit=1)
            if not latest or latest[0].kind != "delegate" or latest[0].status not in TERMINAL:
                continue
            settling = _Settling(latest[0].id, conversation_id)
            try:
                await self._settle(settling)
            except Exception as exc:  # one child must not hold back the others
                if database_unavailable(exc) and settling.claimed:
                    self._retry(settling)  # the claim is taken: no later sweep finds it
                else:
                    log.exception("delegate run %s: its parent was not answered", latest[0].id)
                continue
            if settling.claimed:
                log.warning(
                    "delegate run %s had ended unanswered; its parent answered", latest[0].id
                )
                answered.append(latest[0].id)
        return answered

    async def close(self) -> None:
        """Stop retrying: what is left unanswered, the sweep answers (here or elsewhere)."""
        for task in list(self._settling):
            task.cancel()
        await asyncio.gather(*self._settling, return_exceptions=True)

    async def _report(self, delegation: dt.Delegation, run: RunRecord) -> None:
        """A background run's answer, as a report into the parent conversation."""
        if not (await self._rt.kernel.live_settings())["delegate_report_back"]:
            return
        result = await self._answer(run, None, [])
        await self._reports.queue_report(
            conversation_id=delegation.parent_conversation_id,
            user_id=delegation.user_id,
            source="delegate",
            source_id=run.id,
            title=f"Background subagent run {run.id} {run.status}",
            text=result.text,
            data=dict(result.data or {}),
        )

    async def _persist(self, delegation: dt.Delegation, run: RunRecord) -> None:
        folder = RunFolder(self._rt.kernel.settings, delegation.parent_conversation_id, run.id)
        rows = await self._rt.conversations.rows(run.conversation_id, run_id=run.id)
        meta = {
            **run_meta(run),
            "parent_conversation_id": delegation.parent_conversation_id,
            "parent_run_id": delegation.parent_run_id,
            "task": delegation.task,
            "tools": delegation.reach,
        }
        try:
            await folder.write(meta, rows)
        except (OSError, ToolError):  # the folder is a copy of the store's rows, never the truth
            log.exception("could not write the folder of run %s", run.id)

    # -- people's API (routes and CLI) -------------------------------------------------------

    async def list_delegates(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[dict[str, Any]]:
        """The delegate runs a conversation started, newest first, with their status."""
        await self._rt.conversation(conversation_id, user=user)
        async with self._rt.kernel.sessions() as session:
            delegations = list(
                await session.scalars(
                    select(dt.Delegation)
                    .where(dt.Delegation.parent_conversation_id == conversation_id)
                    .order_by(dt.Delegation.created_at.desc())
                )
            )
        listed = []
        for delegation in delegations:
            for run in await self._rt.runs.list_runs(conversation_id=delegation.conversation_id):
                folder = RunFolder(self._rt.kernel.settings, conversation_id, run.id)
                listed.append(
                    {
                        **run_meta(run),
                        "task": delegation.task,
                        "background": delegation.background,
                        "status_uri": folder.status_uri,
                        "transcript_uri": folder.transcript_uri,
                    }
                )
        return listed

    async def show(self, run_id: str, *, user: str | None = None) -> dict[str, Any]:
        """One delegate run: its meta, the answer it gave, where its transcript is."""
        run, delegation = await self._readable(run_id, user)
        result = await self._answer(run, None, [])
        return {
            **run_meta(run),
            "task": delegation.task,
            "tools": delegation.reach,
            "parent_conversation_id": delegation.parent_conversation_id,
            "answer": result.text,
            **{k: v for k, v in (result.data or {}).items() if k.endswith("_uri")},
        }

    async def stop(self, run_id: str, *, user: str | None = None) -> RunRecord:
        """Stop a delegate run and its children (only the person who started it may)."""
        run, _ = await self._readable(run_id, user, own=True)
        return await self._rt.stop(run.id, user=user)

    async def continue_run(
        self, run_id: str, instruction: str, *, user: str | None = None
    ) -> RunRecord:
        """Give an ended delegate run a further instruction: a new run of the same child,
        with the same narrowing, whose answer reports into the parent conversation."""
        if not instruction.strip():
            raise UsageError("continuing a run needs an instruction")
        run, delegation = await self._readable(run_id, user, own=True)
        if run.status not in TERMINAL:
            raise UsageError(f"run {run_id!r} is {run.status}; continue it once it has ended")
        latest = (await self._rt.runs.list_runs(conversation_id=run.conversation_id, limit=1))[0]
        if latest.id != run.id:
            raise UsageError(f"run {run_id!r} was continued already, as {latest.id!r}")
        async with self._rt.kernel.sessions.begin() as session:
            await session.execute(
                update(dt.Delegation)
                .where(dt.Delegation.conversation_id == run.conversation_id)
                .values(background=True)  # nobody waits for it: it reports back
            )
        conversation = await self._rt.conversations.get(run.conversation_id)
        # turn_spec carries the child's narrowing, limits and kind over from its last run.
        spec = await turn_spec(
            self._rt, conversation, user_id=delegation.user_id, trigger="message", hop=run.hop
        )
        spec = replace(spec, profile=stricter(run.profile, spec.profile))  # never looser
        row = NewRow(kind="user_message", user_id=delegation.user_id, data={"text": instruction})
        self._growing[run.conversation_id] = delegation.parent_conversation_id
        started = await start_turn(self._rt, spec, [row])
        if started is None:
            raise UsageError(f"the subagent of run {run_id!r} is busy; try again once it ends")
        return started[0]

    async def _readable(
        self, run_id: str, user: str | None, *, own: bool = False
    ) -> tuple[RunRecord, dt.Delegation]:
        caller = await self._rt.kernel.caller(user)
        run = await self._rt.runs.get(run_id)
        if run.kind != "delegate":
            # Someone else's run reads as no run at all, whatever its kind: ids cannot be probed.
            await self._rt.run(run_id, user=caller.user_id)
            raise NotFound(f"run {run_id!r} is not a delegate run; `corral runs show` shows it")
        delegation = await self._delegation(run.conversation_id)
        try:
            await self._rt.conversation(delegation.parent_conversation_id, user=caller.user_id)
        except NotFound:
            raise NotFound(f"no run {run_id!r}") from None
        if own and caller.user_id != delegation.user_id:
            raise UsageError(f"only the person who started run {run_id!r} may do that")
        return run, delegation

    # -- bookkeeping --------------------------------------------------------------------------

    async def _delegation(self, conversation_id: str) -> dt.Delegation:
        async with self._rt.kernel.sessions() as session:
            row = await session.get(dt.Delegation, conversation_id)
        if row is None:
            raise NotFound(f"conversation {conversation_id!r} is not a delegate run's")
        return row

    async def _parent_waits(self, conversation_id: str) -> None:
        async with self._rt.kernel.sessions.begin() as session:
            await session.execute(
                update(dt.Delegation)
                .where(dt.Delegation.conversation_id == conversation_id)
                .values(parent_waits=True)
            )

    async def _claim(self, conversation_id: str) -> bool:
        """Take the one right to give the parent call its answer."""
        async with self._rt.kernel.sessions.begin() as session:
            outcome = await session.execute(
                update(dt.Delegation)
                .where(
                    dt.Delegation.conversation_id == conversation_id,
                    dt.Delegation.delivered.is_(False),
                )
                .values(delivered=True)
            )
        return int(getattr(outcome, "rowcount", 0)) == 1

    def _stop_child(self, run_id: str) -> None:
        cancellation = self._rt.live.get(run_id)
        if cancellation is not None:
            cancellation.cancel("stopped")

    async def _stop_children(self, run: RunRecord, status: str) -> None:
        """A stopped run stops all its children; a run that ended otherwise stops those it
        was waiting for (background children go on and report)."""
        reader = self._rt.kernel.reader
        if reader is not None and reader.exists(_ACTIVE_CHILD, (run.id,)) is False:
            return  # most runs start none: answered without a session
        for child in await self._rt.runs.list_runs(statuses=list(ACTIVE), parent_run_id=run.id):
            if status != "stopped" and (await self._delegation(child.conversation_id)).background:
                continue
            await self._rt.stop(child.id, user=child.user_id)


@dataclass(slots=True)
class _Settling:
    """A delegate run's end, and which of its steps are done."""

    run_id: str
    conversation_id: str
    persisted: bool = False
    claimed: bool = False


def run_meta(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "kind": run.kind,
        "status": run.status,
        "reason": run.reason,
        "detail": run.detail,
        "agent": run.agent,
        "model": run.model,
        "profile": run.profile,
        "steps": run.steps,
        "step_budget": run.step_budget,
        "narrowing": run.narrowing.to_json(),
        "created_at": run.created_at,
        "ended_at": run.ended_at,
    }
