"""`corral goals`: set a conversation's goal as a person or a workflow, show it, clear it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._run import console, fail, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.goals import Goals, GoalState

__all__ = ["app"]

app = typer.Typer(
    help="A conversation's goal and todo list: set (locked to the agent), show, clear.",
    no_args_is_help=True,
)


def _goals(platform: Platform) -> Goals:
    from corral.runtime.goals import Goals

    return platform.services.require(Goals)


def _print(state: GoalState, as_json: bool) -> None:
    if as_json:
        print_json(state.to_json())
        return
    from corral.runtime.goals.render import render_state

    console.print(render_state(state), highlight=False, markup=False)


@app.command("show")
def show(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The goal state as the agent sees it in its system prompt."""

    async def work(platform: Platform) -> GoalState:
        return await _goals(platform).state(conversation_id)

    _print(run_with_platform(ctx, work), as_json)


@app.command("set")
def set_goal(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    goal: Annotated[str, typer.Argument(help="The outcome to reach, in one sentence.")],
    condition: Annotated[
        list[str] | None,
        typer.Option("--condition", "-c", help="An acceptance condition (repeat for more)."),
    ] = None,
    step: Annotated[
        list[str] | None, typer.Option("--step", "-s", help="A todo step (repeat for more).")
    ] = None,
    loop: Annotated[int | None, typer.Option(help="How many cycles the agent may take.")] = None,
    workflow: Annotated[
        str | None, typer.Option(help="Set it as this workflow (template name), not as you.")
    ] = None,
    evolve: Annotated[
        str | None,
        typer.Option(help='The workflow template\'s evolve setting: "agent" lifts the lock.'),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Clear an open goal first (archived as cleared).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Set the goal; the agent works towards it and cannot clear or replace it."""
    if evolve not in (None, "agent"):
        fail(f"--evolve may only be 'agent', not {evolve!r}")

    async def work(platform: Platform) -> GoalState:
        return await _goals(platform).set_goal(
            conversation_id,
            goal,
            conditions=condition or [],
            steps=step or [],
            loop=loop,
            workflow=workflow,
            evolve="agent" if evolve == "agent" else None,
            replace=replace,
        )

    _print(run_with_platform(ctx, work), as_json)


@app.command("clear")
def clear(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Clear the open goal or list (archived to the ledger as cleared) and the loop bound."""

    async def work(platform: Platform) -> GoalState:
        return await _goals(platform).clear_goal(conversation_id)

    _print(run_with_platform(ctx, work), as_json)


@app.command("ledger")
def ledger(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
) -> None:
    """The session ledger: every closed cycle as a versioned entry, as JSON."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await _goals(platform).ledger(conversation_id)

    print_json(run_with_platform(ctx, work))
