"""`corral agents`: agents — instructions, model, profile, step budget — and their tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, fail, print_json, run_with_platform
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Agents and their tool selection.", no_args_is_help=True)


@app.command("list")
def list_agents(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        from sqlalchemy import select

        from corral.store import tables as t

        async with platform.sessions() as session:
            rows = await session.scalars(select(t.Agent).order_by(t.Agent.name))
            return [
                {
                    "name": a.name,
                    "model": a.model,
                    "profile": a.profile,
                    "tool_mode": a.tool_mode,
                    "tools_off": a.tools_off,
                    "allowlist": a.allowlist,
                    "pinned_tools": a.pinned_tools,
                }
                for a in rows
            ]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("agent", "model", "profile", "tools")
    for row in rows:
        if row["tool_mode"] == "all":
            tools = "all" + (f" except {', '.join(row['tools_off'])}" if row["tools_off"] else "")
        else:
            tools = "only " + ", ".join(row["allowlist"])
        table.add_row(row["name"], row["model"] or "-", row["profile"], tools)
    console.print(table)


@app.command("tool")
def switch_tool(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    state: Annotated[str, typer.Argument(help="on or off")],
) -> None:
    """Switch one tool on or off for an agent, keeping its mode."""
    if state not in ("on", "off"):
        fail("state must be 'on' or 'off'")

    async def work(platform: Platform) -> None:
        await platform.admin.set_tool_enabled(agent, tool, state == "on")

    run_with_platform(ctx, work)
    console.print(f"{tool!r} is {state} for agent {agent!r}")


@app.command("only")
def only_tools(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    tools: Annotated[list[str], typer.Argument(help="The tools to keep.")],
) -> None:
    """Leave all mode: freeze a custom allowlist."""

    async def work(platform: Platform) -> None:
        await platform.admin.set_custom_tools(agent, tools)

    run_with_platform(ctx, work)
    console.print(f"agent {agent!r} now uses only {', '.join(tools)}")


@app.command("pin")
def pin_tools(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    tools: Annotated[
        list[str] | None, typer.Argument(help="The tools to pin; none unpins every tool.")
    ] = None,
) -> None:
    """Pin tools: given in full every step, never deferred by tool search."""

    async def work(platform: Platform) -> None:
        await platform.admin.set_pinned_tools(agent, tools or [])

    run_with_platform(ctx, work)
    pinned = ", ".join(tools) if tools else "no tools"
    console.print(f"agent {agent!r} pins {pinned}", highlight=False)


@app.command("all")
def all_tools(
    ctx: typer.Context, agent: Annotated[str, typer.Argument(help="Agent name.")]
) -> None:
    """Return to all mode with nothing switched off."""

    async def work(platform: Platform) -> None:
        await platform.admin.set_all_tools(agent)

    run_with_platform(ctx, work)
    console.print(f"agent {agent!r} uses all visible tools")


@app.command("set")
def set_agent(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Agent name (created if new).")],
    instructions: Annotated[str | None, typer.Option(help="The agent's instructions.")] = None,
    model: Annotated[str | None, typer.Option(help="provider:model it runs on.")] = None,
    profile: Annotated[str | None, typer.Option(help="safe, balanced or auto.")] = None,
    step_budget: Annotated[
        int | None, typer.Option(help="Model turns per run (default: live run_step_budget).")
    ] = None,
) -> None:
    """Create an agent or change it; tool selection is `agents tool/only/all`."""
    from corral.policy.profiles import parse_profile

    fields: dict[str, Any] = {}
    if instructions is not None:
        fields["instructions"] = instructions
    if model is not None:
        fields["model"] = model or None
    if profile is not None:
        try:
            fields["profile"] = parse_profile(profile)
        except UsageError as exc:
            fail(str(exc))
    if step_budget is not None:
        if step_budget < 1:
            raise typer.BadParameter("the step budget is at least 1")
        fields["step_budget"] = step_budget

    async def work(platform: Platform) -> None:
        if not fields:
            from corral.runtime.agents import load_agent

            await load_agent(platform.sessions, name)  # NotFound for a new agent without fields
            raise UsageError(
                "name at least one of --instructions, --model, --profile, --step-budget"
            )
        await platform.admin.ensure_agent(name, **fields)

    run_with_platform(ctx, work)
    console.print(f"agent {name!r} saved", highlight=False)
