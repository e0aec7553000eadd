"""`corral agents set`: an agent's instructions, model, profile and step budget."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from corral.cli._run import console, run_with_platform
from corral.errors import UsageError
from corral.platform import Platform
from corral.policy.profiles import parse_profile
from corral.runtime.agents import load_agent

__all__ = ["set_agent"]


def set_agent(
    name: Annotated[str, typer.Argument(help="Agent name (created if new).")],
    instructions: Annotated[str | None, typer.Option(help="The agent's instructions.")] = None,
    model: Annotated[str | None, typer.Option(help="provider:model it runs on.")] = None,
    profile: Annotated[str | None, typer.Option(help="safe, balanced or auto.")] = None,
    step_budget: Annotated[
        int | None, typer.Option(help="Model turns per run (default: live run_step_budget).")
    ] = None,
) -> None:
    """Create an agent or change it; tool selection is `agents tool/only/all`."""
    fields: dict[str, Any] = {}
    if instructions is not None:
        fields["instructions"] = instructions
    if model is not None:
        fields["model"] = model or None
    if profile is not None:
        fields["profile"] = parse_profile(profile)
    if step_budget is not None:
        if step_budget < 1:
            raise typer.BadParameter("the step budget is at least 1")
        fields["step_budget"] = step_budget

    async def work(platform: Platform) -> None:
        if not fields:
            await load_agent(platform.sessions, name)  # NotFound for a new agent without fields
            raise UsageError(
                "name at least one of --instructions, --model, --profile, --step-budget"
            )
        await platform.admin.ensure_agent(name, **fields)

    run_with_platform(work)
    console.print(f"agent {name!r} saved", highlight=False)
