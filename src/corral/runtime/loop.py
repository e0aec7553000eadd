"""The agent loop: ``advance_run(run_id)``, the job that takes a run's steps.

A step is one model turn: build the prompt from the timeline, ask the model, store its
turn, run its tool calls concurrently (each result stored as it arrives). The run ends
*finished* when the model answers without calls, *parked* when a call waits for a person,
*stopped* on Stop, *partial* when its step budget or wall-clock limit runs out (or the
process closes; reason ``budget_exhausted`` when a limit of its budget is reached, after one
text-only wrap-up turn), *failed* when the model cannot be reached.

Stop and the wall-clock limit share one :class:`~corral.tools.context.Cancellation` with
every call of the run, so whatever the run started ends with it; what was captured is kept.
Wall-clock time counts while the run runs, not while it is parked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    UserPromptPart,
)

from corral.errors import CorralError, Refusal
from corral.policy.profiles import parse_profile, stricter
from corral.runtime.agents import AgentConfig, load_agent
from corral.runtime.appends import Fenced
from corral.runtime.approved_calls import run_approved_calls
from corral.runtime.budgets.keeper import BudgetKeeper, Unpriced, open_budget
from corral.runtime.calls import StepScope, run_calls
from corral.runtime.chat_content import record_input, record_output
from corral.runtime.endings import Outcome, end_run, park_run
from corral.runtime.hooks import permission_mode
from corral.runtime.models import ResolvedModel
from corral.runtime.parking import open_waits, resume_if_answered
from corral.runtime.prompt import Prompt, PromptRequest
from corral.runtime.run_spans import (
    chat_span,
    end_chat_span,
    end_run_span,
    run_span,
    trace_to_keep,
)
from corral.runtime.runs import RunRecord
from corral.runtime.takeover import (
    TAKEN_OVER,
    hand_back,
    hand_over,
    interrupted_rows,
    take_over,
    taken_over_line,
    unfinished_calls,
)
from corral.runtime.timeline import NewRow
from corral.store.outages import database_unavailable
from corral.tools.context import Cancellation
from corral.tools.results import ToolResult
from corral.tools.secret_arguments import storable
from corral.tracing import content_recorded

if TYPE_CHECKING:
    from corral.policy.identity import Caller
    from corral.runtime.host import RunHost

__all__ = ["advance_run"]

log = logging.getLogger("corral.runtime")

OUTAGE = "database_outage"
"""The cancellation reason of a run whose job met a database outage: its calls end, and
the run is handed back to be retried."""

STOP_CHECK_SECONDS = 1.0
"""How often a running run looks for a Stop requested from another process."""

BUDGET_EXHAUSTED = "budget_exhausted"
"""The reason of a run that ended because a limit of its budget was reached."""

WRAP_UP_SECONDS = 90.0
"""How long a delegate run's wrap-up turn may take before the run is cut without it."""

WRAP_UP = (
    "[platform] {why}. Do not call tools. Write your final answer now: what you found and "
    "did, what is unfinished, and what the person who delegated this should do next."
)


async def advance_run(rt: RunHost, run_id: str) -> None:
    """Take the steps of a queued run until it finishes, parks or stops."""
    run = await rt.runs.find(run_id)
    if run is None:
        return
    if run.status == "running":
        # Only a cluster's job finds its run running: its worker died, or handed it over.
        await _continue_taken_over(rt, run)
        return
    if run.status != "queued":
        return
    own, parents = await rt.conversations.profiles(run.conversation_id)
    # A run may only become stricter: it adopts a stricter conversation profile on resume.
    profile = stricter(run.profile, parse_profile(own))
    if parents is not None:  # a subagent also follows its parent conversation's switches
        profile = stricter(profile, parse_profile(parents))
    # Registered before the run counts as running, so a Stop in between always finds it.
    cancellation = Cancellation()
    rt.live[run_id] = cancellation
    claimed = await rt.runs.claim(
        run_id,
        from_statuses=["queued"],
        to="running",
        worker=rt.worker,
        profile=profile,
        bump_lease=True,
    )
    if claimed is None:
        if rt.live.get(run_id) is cancellation:
            del rt.live[run_id]
        return
    run = claimed
    await rt.board.set(run_id, "running")
    rt.publish_run(run.conversation_id, run_id, "running", None, "")
    await _advance(rt, run, cancellation)


async def _continue_taken_over(rt: RunHost, run: RunRecord) -> None:
    if not await take_over(rt, run):
        return
    log.warning("%s", taken_over_line(run.id, run.worker))
    # Registered once the run is ours: a Stop asked before is in its stored flag.
    cancellation = Cancellation()
    rt.live[run.id] = cancellation
    run = await rt.runs.get(run.id)
    await rt.board.set(run.id, "running")
    await _advance(rt, run, cancellation, taken_over=True)


async def _advance(
    rt: RunHost, run: RunRecord, cancellation: Cancellation, *, taken_over: bool = False
) -> None:
    """Take the steps of ``run``, now running here, and park or end it."""
    tracer = rt.kernel.dispatcher.tracer
    if tracer is None:
        await _advance_here(rt, run, cancellation, taken_over=taken_over)
        return
    with run_span(tracer, run) as span:
        if (traceparent := trace_to_keep(run)) is not None:
            await rt.runs.keep_trace(run.id, traceparent)
        outcome = await _advance_here(rt, run, cancellation, taken_over=taken_over)
        if outcome is not None:
            end_run_span(span, outcome)


async def _advance_here(
    rt: RunHost, run: RunRecord, cancellation: Cancellation, *, taken_over: bool
) -> Outcome | None:
    """Take the steps of ``run`` and park or end it: its outcome, None when this process
    let it go (handed back or taken over)."""
    run_id = run.id
    started = time.monotonic()
    step = _Loop(rt, run, cancellation, started, taken_over=taken_over)
    # Only a cluster checks it: there another worker may take the run over while this one
    # is paused, and then this one's writes must not land.
    held = run.lease if rt.jobs.distributed else None
    if held is not None:
        rt.leases[run_id] = held
    try:
        outcome = await step.run()
    except Fenced:
        log.warning("run %s: a write was refused, another worker holds it now", run_id)
        cancellation.cancel(TAKEN_OVER)
        outcome = Outcome(status="stopped")  # not stored: this worker lets go below
    except asyncio.CancelledError:
        if rt.jobs.distributed and await hand_over(rt, step.run_record):
            raise  # another worker continues it from its last persisted step
        await end_run(
            rt,
            run,
            Outcome(status="partial", reason="shutdown", detail="the process running it closed"),
            active_seconds=step.active_seconds(),
            steps=step.run_record.steps,
            held_lease=held,  # a run taken over meanwhile is not this process's to end
        )
        raise
    except Exception as exc:
        if rt.jobs.distributed and database_unavailable(exc):
            # Not the run's fault: another job retries it from its last persisted step.
            log.warning("run %s met a database outage (%s); it is handed back", run_id, exc)
            cancellation.cancel(OUTAGE)
        else:
            log.exception("run %s failed", run_id)
        outcome = Outcome(status="failed", reason="error", detail=f"{type(exc).__name__}: {exc}")
    finally:
        rt.live.pop(run_id, None)
        rt.leases.pop(run_id, None)
    if cancellation.reason == OUTAGE:
        if await hand_back(rt, step.run_record, held):
            return None
        retries = rt.kernel.settings.cluster_outage_retries
        outcome = Outcome(
            status="failed",
            reason="error",
            detail=f"the database failed this run {retries + 1} times; it was retried from "
            f"its last step {retries} times (cluster_outage_retries). The last failure: "
            f"{outcome.detail}. Fix the database, then run it again.",
        )
    if cancellation.reason == TAKEN_OVER:
        log.warning("run %s was taken over by another worker; this one lets go", run_id)
        return None
    if outcome.status == "parked":
        if not await park_run(rt, step.run_record, outcome, step.active_seconds(), held_lease=held):
            return None  # taken over meanwhile: the new worker parks or ends it
        # After "parked" is announced, so that "queued" never comes before it.
        parked = step.run_record
        await rt.jobs.after_job(run_id, lambda: resume_if_answered(rt, parked))
    else:
        if step.budget is not None:
            outcome = replace(outcome, budget=await step.budget.close())
        await end_run(
            rt,
            step.run_record,
            outcome,
            active_seconds=step.active_seconds(),
            steps=step.run_record.steps,
            held_lease=held,
        )
    return outcome


@dataclass(slots=True)
class _Context:
    agent: AgentConfig
    caller: Caller
    model: ResolvedModel


class _Loop:
    def __init__(
        self,
        rt: RunHost,
        run: RunRecord,
        cancellation: Cancellation,
        started: float,
        *,
        taken_over: bool = False,
    ):
        self.rt = rt
        self.run_record = run
        self.cancellation = cancellation
        self.started = started
        self.taken_over = taken_over
        self._stop_checked = started
        self._kept_going_by_hook = False
        self.budget: BudgetKeeper | None = None

    def active_seconds(self) -> float:
        return self.run_record.active_seconds + (time.monotonic() - self.started)

    async def run(self) -> Outcome:
        run = self.run_record
        scope = None if self.taken_over else self.rt.scopes.take(run)
        if scope is not None:  # resolved by the turn that started this run, just now
            context = _Context(agent=scope.agent, caller=scope.caller, model=scope.model)
        else:
            resolved = await self._resolve(run)
            if isinstance(resolved, Outcome):
                return resolved
            context = resolved
        try:
            self.budget = await self._open_budget()
        except Unpriced as exc:
            return Outcome(status="failed", reason="budget_unpriced", detail=str(exc))
        if self.budget is not None:
            self.rt.budgeted.add(run.id)
        try:
            return await self._timed(context)
        finally:
            self.rt.budgeted.discard(run.id)

    async def _timed(self, context: _Context) -> Outcome:
        run = self.run_record
        remaining = run.wall_clock_limit_s - run.active_seconds
        budget_wall = self.budget.limits.wall_seconds if self.budget is not None else None
        if budget_wall is not None and budget_wall - run.active_seconds < remaining:
            remaining, reason = budget_wall - run.active_seconds, "budget_wall"
        else:
            reason = "wall_clock"
        if remaining <= 0:
            return self._cancelled(reason)
        timer = self.rt.timers.call_later(remaining, lambda: self.cancellation.cancel(reason))
        try:
            outcome = await self._steps(context)
        finally:
            timer.cancel()
        if outcome.reason == BUDGET_EXHAUSTED or (
            run.kind == "delegate" and outcome.reason in ("wall_clock", "step_budget")
        ):
            await self._wrap_up(context, outcome.detail)
        if outcome.reason == BUDGET_EXHAUSTED:
            await self.rt.budgets.mark_exhausted(run.id, outcome.detail)
        return outcome

    async def _open_budget(self) -> BudgetKeeper | None:
        run = self.run_record
        return await open_budget(
            self.rt.budgets,
            await self.rt.kernel.live_settings(),
            run_id=run.id,
            parent_run_id=run.parent_run_id,
            conversation_id=run.conversation_id,
            agent=run.agent,
            profile=run.profile,
            model=run.model,
            clock=self.active_seconds,
        )

    async def _resolve(self, run: RunRecord) -> _Context | Outcome:
        """The agent, caller and model of a run that starts as its own entry point (a
        resume, a takeover, a run queued elsewhere)."""
        try:
            agent = await load_agent(self.rt.kernel.sessions, run.agent)
            # Rights are re-resolved whenever a run (re)starts: it can lose reach, never gain.
            caller = await self.rt.kernel.caller(run.user_id)
        except CorralError as exc:
            return Outcome(status="failed", reason="error", detail=str(exc))
        try:
            model = await self.rt.models.resolve_for(
                run.model, user_id=run.user_id, credentials=self.rt.kernel.services.credentials
            )
        except CorralError as exc:
            return Outcome(status="failed", reason="model_error", detail=str(exc))
        return _Context(agent=agent, caller=caller, model=model)

    async def _steps(self, context: _Context) -> Outcome:
        first = True
        if self.taken_over:
            cut = await self._settle_cut_turn(context)
            if cut is not None:
                return cut
        parked = await self._run_approved(context)
        if parked is not None:
            return parked
        while True:
            if self.cancellation.cancelled or await self._stop_requested():
                return self._cancelled()
            run = self.run_record
            # A delegate run keeps its budget's last step for the wrap-up turn.
            if run.steps >= run.step_budget - (1 if run.kind == "delegate" else 0):
                return Outcome(
                    status="partial",
                    reason="step_budget",
                    detail=f"the step budget of {run.step_budget} model turns is used up",
                )
            if self.budget is not None:
                spent = await self.budget.reached()
                if spent is not None:
                    return _exhausted(spent)
            prompt = await self._prompt(context, refresh=first)
            first = False
            try:
                response = await self._model_turn(context.model, prompt)
            except CorralError:
                raise
            except Exception as exc:
                if self.cancellation.cancelled:
                    return self._cancelled()
                log.warning("model %s failed in run %s: %s", run.model, run.id, exc)
                done = f" after {run.steps} steps" if run.steps else " before its first step"
                return Outcome(
                    status="failed",
                    reason="model_error",
                    detail=f"the model {run.model!r} failed{done}: {type(exc).__name__}: {exc}",
                )
            if response is None:
                return self._cancelled()
            calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
            spent = await self.budget.charge(response) if self.budget is not None else None
            await self._store_turn(response, calls)
            if spent is not None:
                await self._not_run(calls, spent)
                return _exhausted(spent)
            if not calls:
                if await self._stop_hooks_continue(response.text or ""):
                    continue
                return Outcome(status="finished")
            scope = StepScope(
                run=self.run_record,
                caller=context.caller,
                cancellation=self.cancellation,
                services=self.rt.services_for(context.model),
            )
            outcomes = await run_calls(self.rt, scope, calls)
            waits = tuple(o.wait for o in outcomes if o.wait is not None)
            if waits and not self.cancellation.cancelled:
                still = await open_waits(self.rt, run.id, waits)
                if still:
                    return Outcome(status="parked", waits=still)
                # Answered while the turn ran, possibly by another process: re-read the rows.
                self.rt.prompt.invalidate(run.conversation_id)
                parked = await self._run_approved(context)
                if parked is not None:
                    return parked

    async def _run_approved(self, context: _Context) -> Outcome | None:
        """Run the calls approved while the run was parked (or its turn ran): here, in the
        run's job, never in the request that approved them; parked again when one of them
        waits in turn."""
        waits = await run_approved_calls(self.rt, self._scope(context))
        if self.cancellation.cancelled:
            return self._cancelled()
        if waits:
            still = await open_waits(self.rt, self.run_record.id, waits)
            if still:
                return Outcome(status="parked", waits=still)
        return None

    def _scope(self, context: _Context) -> StepScope:
        return StepScope(
            run=self.run_record,
            caller=context.caller,
            cancellation=self.cancellation,
            services=self.rt.services_for(context.model),
        )

    async def _stop_hooks_continue(self, answer: str) -> bool:
        """Run the Stop (a delegate: SubagentStop) hooks before the run ends; a block keeps
        it going with the hook's reason as the next message, as in Claude Code."""
        hooks, run = self.rt.hooks, self.run_record
        if hooks is None or not hooks.configured:
            return False
        outcome = await hooks.run(
            "SubagentStop" if run.kind == "delegate" else "Stop",
            {
                "session_id": run.conversation_id,
                "permission_mode": permission_mode(run.profile),
                "stop_hook_active": self._kept_going_by_hook,
                "last_assistant_message": answer,
                "agent_type": run.agent,
            },
        )
        if not outcome.blocked:
            return False
        self._kept_going_by_hook = True
        text = f"[platform] An operator hook did not let the run end yet: {outcome.reason}"
        row = NewRow(
            kind="user_message",
            run_id=run.id,
            user_id=run.user_id,
            data={"text": text, "hook": "Stop"},
        )
        await self.rt.append(run.conversation_id, [row])
        return True

    async def _settle_cut_turn(self, context: _Context) -> Outcome | None:
        """Give the calls the dead worker left without a result theirs (see takeover)."""
        run = self.run_record
        unfinished = await unfinished_calls(self.rt, run.id)
        if unfinished.answered:
            return Outcome(status="finished")
        if unfinished.interrupted:
            await self.rt.append(run.conversation_id, interrupted_rows(run, unfinished.interrupted))
        if unfinished.rerun:
            scope = StepScope(
                run=run,
                caller=context.caller,
                cancellation=self.cancellation,
                services=self.rt.services_for(context.model),
            )
            outcomes = await run_calls(self.rt, scope, unfinished.rerun)
            waits = tuple(o.wait for o in outcomes if o.wait is not None)
            unfinished = replace(unfinished, waits=unfinished.waits + waits)
        self.rt.prompt.invalidate(run.conversation_id)
        if unfinished.waits:
            still = await open_waits(self.rt, run.id, unfinished.waits)
            if still:
                return Outcome(status="parked", waits=still)
        return None

    async def _wrap_up(self, context: _Context, why: str) -> None:
        """One text-only turn for a delegate run that ran out of time or steps, or any run
        that spent its budget, so that it returns a focused partial summary; cut without it
        after ``WRAP_UP_SECONDS``."""
        prompt = await self._prompt(context, refresh=False, with_tools=False)
        ask = ModelRequest(parts=[UserPromptPart(WRAP_UP.format(why=why[:1].upper() + why[1:]))])
        try:
            async with asyncio.timeout(WRAP_UP_SECONDS):
                response = await context.model.model.request(
                    [*prompt.messages, ask], None, prompt.parameters
                )
        except Exception as exc:  # the wrap-up is a courtesy: the run ends partial either way
            log.warning("the wrap-up turn of run %s did not land: %r", self.run_record.id, exc)
            return
        if self.budget is not None:  # spent past the limit, as any last response is
            await self.budget.charge(response)
        text = response.text or ""
        if text.strip():
            await self._store_turn(ModelResponse(parts=[TextPart(text)]), [])

    async def _not_run(self, calls: list[ToolCallPart], why: str) -> None:
        """Answer the calls of the response that reached a budget limit: none of them runs."""
        run = self.run_record
        rows = [
            NewRow(
                kind="tool_result",
                run_id=run.id,
                user_id=run.user_id,
                call_id=call.tool_call_id,
                data={
                    "tool": call.tool_name,
                    "result": ToolResult.from_error(
                        Refusal(
                            f"Not run: the run's budget is spent ({why})", code=BUDGET_EXHAUSTED
                        )
                    ).to_json(),
                },
            )
            for call in calls
        ]
        if rows:
            await self.rt.append(run.conversation_id, rows)

    async def _prompt(self, context: _Context, *, refresh: bool, with_tools: bool = True) -> Prompt:
        rt, run = self.rt, self.run_record
        state = await rt.kernel.config.dispatch_state()
        tools = await rt.visible_tools(run, context.caller) if with_tools else []
        return await rt.prompt.build(
            PromptRequest(
                conversation_id=run.conversation_id,
                run=run,
                agent=context.agent.name,
                instructions=context.agent.instructions,
                caller=context.caller,
                tools=tools,
                media=context.model.media,
                sources=state.sources,
                live=state.live,
                background=rt.background_work,
                pinned_tools=context.agent.pinned_tools,
                refresh=refresh,
            )
        )

    async def _model_turn(self, model: ResolvedModel, prompt: Prompt) -> ModelResponse | None:
        """The model's response, or None when the run was stopped while it was asked.

        The request runs in this task (a task of its own cost an extra loop pass a step); a
        Stop cancels this task and the cancellation is taken back here, unless this task was
        also cancelled from outside (a shutdown), which goes on."""
        current = asyncio.current_task()
        assert current is not None
        if self.cancellation.cancelled:
            return None
        stopped = False

        def stop() -> None:
            nonlocal stopped
            if not stopped:
                stopped = True
                current.cancel()

        unregister = self.cancellation.on_cancel(stop)
        try:
            response = await self._request(model, prompt)
        except asyncio.CancelledError:
            if stopped and current.uncancel() == 0:
                return None
            raise
        finally:
            unregister()
        if stopped:  # the request swallowed the cancellation: take it back all the same
            current.uncancel()
            return None
        return response

    async def _request(self, resolved: ResolvedModel, prompt: Prompt) -> ModelResponse:
        tracer = self.rt.kernel.dispatcher.tracer
        if tracer is None:
            return await self._ask(resolved, prompt)
        with chat_span(tracer, resolved.model) as span:
            state = await self.rt.kernel.config.dispatch_state()
            content = content_recorded(state.live)
            if content:
                system = [part.content for part in prompt.instructions]
                registry = self.rt.kernel.registry
                record_input(span, system, prompt.messages, registry, state.redactor)
            response = await self._ask(resolved, prompt)
            end_chat_span(span, response)
            if content:
                record_output(span, response, self.rt.kernel.registry, state.redactor)
            return response

    async def _ask(self, resolved: ResolvedModel, prompt: Prompt) -> ModelResponse:
        run = self.run_record
        if not self.rt.events.has_subscribers(run.conversation_id):
            return await resolved.model.request(prompt.messages, None, prompt.parameters)
        async with resolved.model.request_stream(
            prompt.messages, None, prompt.parameters
        ) as stream:
            async for event in stream:
                text = ""
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    text = event.part.content
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    text = event.delta.content_delta
                if text:
                    self.rt.events.publish(
                        run.conversation_id, {"type": "delta", "run_id": run.id, "text": text}
                    )
            return stream.get()

    async def _store_turn(self, response: ModelResponse, calls: list[ToolCallPart]) -> None:
        run = self.run_record
        usage = response.usage
        rows = [
            NewRow(
                kind="model_turn",
                run_id=run.id,
                user_id=run.user_id,
                data={
                    "text": response.text or "",
                    "model": response.model_name or run.model,
                    "usage": {"input": usage.input_tokens, "output": usage.output_tokens},
                },
            )
        ]
        rows += [
            NewRow(
                kind="tool_call",
                run_id=run.id,
                user_id=run.user_id,
                call_id=call.tool_call_id,
                data={"tool": call.tool_name, "args": self._storable(call)},
            )
            for call in calls
        ]
        await self.rt.append(run.conversation_id, rows)
        # The Steps counter is stored when the run parks or ends; the rows are stored now.
        self.run_record = replace(run, steps=run.steps + 1)

    def _storable(self, call: ToolCallPart) -> dict[str, Any]:
        """The call's arguments as the timeline keeps them: secret arguments left out."""
        loaded = self.rt.kernel.registry.tools.get(call.tool_name)
        pointers = loaded.spec.secret_arguments if loaded is not None else ()
        return dict(storable(pointers, call.args_as_dict()))

    async def _stop_requested(self) -> bool:
        now = time.monotonic()
        if now - self._stop_checked < STOP_CHECK_SECONDS:
            return False
        self._stop_checked = now
        if await self.rt.runs.stop_requested(self.run_record.id):
            self.cancellation.cancel("stopped")
            return True
        return False

    def _cancelled(self, why: str | None = None) -> Outcome:
        reason = why or self.cancellation.reason or "stopped"
        if reason == "wall_clock":
            return self._wall_clock()
        if reason == "budget_wall" and self.budget is not None:
            limit = self.budget.limits.wall_seconds or 0.0
            return _exhausted(f"the limit of {limit:g} seconds of wall time")
        if reason == "shutdown":
            return Outcome(
                status="partial", reason="shutdown", detail="the process running it closed"
            )
        return Outcome(
            status="stopped",
            reason="stopped",
            detail=f"stopped after {_steps(self.run_record.steps)}; what it captured is kept",
        )

    def _wall_clock(self) -> Outcome:
        limit = self.run_record.wall_clock_limit_s
        return Outcome(
            status="partial",
            reason="wall_clock",
            detail=f"the wall-clock limit of {limit:g} s of running time was reached",
        )


def _exhausted(why: str) -> Outcome:
    return Outcome(
        status="partial", reason=BUDGET_EXHAUSTED, detail=f"the run's budget is spent: {why}"
    )


def _steps(count: int) -> str:
    return "1 step" if count == 1 else f"{count} steps"
