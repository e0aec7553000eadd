"""Steps per second of the agent loop against pydantic-ai's own Agent, and prompt build time.

    .venv/bin/python bench/loop.py [--steps N] [--rows N]

Both loops run in the same process on the same model function (a pydantic-ai
``FunctionModel`` that calls a trivial tool until the last step) and the same trivial tool,
so model and tool cost the same on both sides and the difference is loop overhead. Ours
also persists every step in SQLite, rebuilds the prompt from the timeline and sends each
call through the dispatch pipeline. A third line runs our loop on the ``script:`` model.

Then a conversation of ``--rows`` timeline rows: a cold prompt build (reads every row),
warm builds (one new row since the last build, as every step of a long conversation) and
warm builds with an overlay installed (every row passes the overlay each step).
Targets: our persisted step at most 0.2x pydantic-ai's (issue 39); a warm 10,000-row
build under 20 ms (its baseline: the cold build of the same rows). Each loop takes the best
of ``--rounds`` runs, both sides alike: noise on a shared machine only ever adds time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

import corral
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt import PromptRequest
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow
from long_conversation import fill
from noop_package import write_package
from outcome import Figure, finish

STEP_RATIO_TARGET = 0.2
WARM_BUILD_TARGET_MS = 20.0


def model_function(steps: int) -> Any:
    """Call noop until ``steps`` responses were given, then answer in text."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        if done + 1 >= steps:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        call = ToolCallPart("noop", {"text": "hi"}, tool_call_id=f"c{done}")
        return ModelResponse(parts=[call], usage=usage)

    return respond


async def pydantic_ai_agent(steps: int, rounds: int = 1) -> float:
    agent = Agent(FunctionModel(model_function(steps)))

    @agent.tool_plain
    async def noop(text: str) -> str:
        """Return the given text."""
        return text

    limits = UsageLimits(request_limit=None)
    await agent.run("warm up", usage_limits=limits)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        result = await agent.run("go", usage_limits=limits)
        best = min(best, time.perf_counter() - started)
        assert result.output == "done"
    return best / steps


async def our_loop(platform: Any, model: str, steps: int, rounds: int = 1) -> float:
    await platform.chat("warm up", model=model)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        turn = await platform.chat("go", model=model)
        best = min(best, time.perf_counter() - started)
        assert turn.status == "finished" and turn.steps == steps, (turn.status, turn.detail)
    return best / steps


async def prompt_builds(rt: Runtime, rows: int) -> tuple[float, list[float], list[float]]:
    owner = await rt.kernel.caller()
    conversation = await rt.start_conversation(model="bench:fn")
    await fill(rt, conversation.id, rows, tool="noop")
    turn = await rt.chat("one step", conversation_id=conversation.id)
    run = await rt.runs.get(turn.run_id)
    state = await rt.kernel.config.dispatch_state()
    request = PromptRequest(
        conversation_id=conversation.id,
        run=run,
        agent=run.agent,
        instructions="You are a benchmark.",
        caller=owner,
        tools=await rt.visible_tools(run, owner),
        media=MediaSupport(),
        sources=state.sources,
        live=state.live,
    )
    rt.prompt.forget(conversation.id)
    started = time.perf_counter()
    await rt.prompt.build(request)
    cold = time.perf_counter() - started
    warm = []
    for i in range(20):
        await rt.append(conversation.id, [NewRow(kind="user_message", data={"text": f"more {i}"})])
        started = time.perf_counter()
        prompt = await rt.prompt.build(request)
        warm.append(time.perf_counter() - started)
    assert len(prompt.messages) >= rows // 2
    # An overlay (issue 7's compact_history) hands over a new row list: every group is
    # checked again, reusing the messages of unchanged rows.
    rt.prompt.add_overlay(lambda rows, view: list(rows))
    overlaid = []
    for i in range(20):
        await rt.append(conversation.id, [NewRow(kind="user_message", data={"text": f"o {i}"})])
        started = time.perf_counter()
        await rt.prompt.build(request)
        overlaid.append(time.perf_counter() - started)
    rt.prompt.overlays.clear()
    return cold, warm, overlaid


async def measure(steps: int, rows: int, rounds: int) -> list[Figure]:
    theirs = await pydantic_ai_agent(steps, rounds)
    with tempfile.TemporaryDirectory() as tmp:
        package = write_package(Path(tmp))
        script = Path(tmp) / "script.json"
        script.write_text(
            json.dumps(
                {
                    "turns": [{"tool_calls": [{"name": "noop", "args": {"text": "hi"}}]}]
                    * (steps - 1),
                    "final_text": "done",
                }
            )
        )
        async with corral.open(Path(tmp) / "data", package_paths=[package]) as platform:
            await platform.admin.set_live("run_step_budget", steps + 10)
            rt = platform.runtime
            rt.models.register("bench:fn", FunctionModel(model_function(steps)))
            ours = await our_loop(platform, "bench:fn", steps, rounds)
            scripted = await our_loop(platform, f"script:{script}", steps, rounds)
            cold, warm, overlaid = await prompt_builds(rt, rows)
    print(f"steps per run: {steps}")
    median, with_overlay = statistics.median(warm), statistics.median(overlaid)
    ratio = ours / theirs
    return [
        Figure(name="pydantic-ai Agent + FunctionModel step", value=theirs * 1e3, unit="ms"),
        Figure(
            name="corral step, persisted, same FunctionModel",
            value=ours * 1e3,
            unit="ms",
            baseline=theirs * 1e3,
            target=f"<= {STEP_RATIO_TARGET}x",
            met=ratio <= STEP_RATIO_TARGET,
        ),
        Figure(
            name="corral step, script: model",
            value=scripted * 1e3,
            unit="ms",
            baseline=theirs * 1e3,
        ),
        Figure(name=f"prompt build, {rows:,} rows, cold", value=cold * 1e3, unit="ms"),
        Figure(
            name=f"prompt build, {rows:,} rows, warm (median)",
            value=median * 1e3,
            unit="ms",
            baseline=cold * 1e3,
            target=f"< {WARM_BUILD_TARGET_MS:.0f} ms",
            met=median * 1e3 < WARM_BUILD_TARGET_MS,
        ),
        Figure(
            name=f"prompt build, {rows:,} rows, warm with an overlay (median)",
            value=with_overlay * 1e3,
            unit="ms",
            baseline=cold * 1e3,
            target=f"< {WARM_BUILD_TARGET_MS:.0f} ms",
            met=with_overlay * 1e3 < WARM_BUILD_TARGET_MS,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    finish("loop", asyncio.run(measure(options.steps, options.rows, options.rounds)))


if __name__ == "__main__":
    main()
