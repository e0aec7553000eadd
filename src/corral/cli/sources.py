"""`corral sources`, `corral agents`, `corral packages`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

import typer
from rich.table import Table
from sqlalchemy import select

from corral.cli._run import console, fail, print_json, run_with_platform
from corral.platform import Platform
from corral.store import tables as t

sources = typer.Typer(help="Sources and their URI policies.", no_args_is_help=True)
agents = typer.Typer(help="Agents and their tool selection.", no_args_is_help=True)
packages = typer.Typer(help="Enable or disable tool packages.", no_args_is_help=True)


@sources.command("list")
def list_sources(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        async with platform.sessions() as session:
            rights: dict[str, list[str]] = {}
            for r in await session.scalars(select(t.SourceRight)):
                rights.setdefault(r.source, []).append(
                    f"{r.principal_kind}:{r.principal}={r.rights}"
                )
            rows = await session.scalars(select(t.Source).order_by(t.Source.name))
            return [
                {
                    "name": s.name,
                    "connector": s.connector,
                    "root": s.root,
                    "rights": rights.get(s.name, []),
                }
                for s in rows
            ]

    rows = run_with_platform(work)
    if as_json:
        print_json(rows)
        return
    table = Table("source", "connector", "root", "rights")
    for row in rows:
        table.add_row(row["name"], row["connector"], row["root"], " ".join(row["rights"]))
    console.print(table)


@sources.command("add")
def add_source(
    name: Annotated[str, typer.Argument(help="Source name, used as name://path.")],
    root: Annotated[str, typer.Argument(help="Absolute root folder.")],
    connector: Annotated[str, typer.Option(help="local or host.")] = "local",
) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.add_source(name, root, connector=connector)

    run_with_platform(work)
    console.print(f"source {name!r} → {root} ({connector}); grant rights with `sources grant`")


@sources.command("grant")
def grant(
    source: Annotated[str, typer.Argument(help="Source name.")],
    rights: Annotated[str, typer.Argument(help="Any of r, w, x; '-' removes all.")],
    role: Annotated[str | None, typer.Option(help="Role name, or * for every role.")] = None,
    user: Annotated[str | None, typer.Option(help="User id.")] = None,
) -> None:
    if (role is None) == (user is None):
        fail("name exactly one of --role or --user")
    kind = "role" if role is not None else "user"
    principal = cast(str, role if role is not None else user)

    async def work(platform: Platform) -> None:
        await platform.admin.grant_source(
            source,
            principal_kind=cast(Literal["role", "user"], kind),
            principal=principal,
            rights=rights,
        )

    run_with_platform(work)
    console.print(f"{kind} {principal!r} holds {rights!r} on {source!r}")


@agents.command("list")
def list_agents(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
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
                }
                for a in rows
            ]

    rows = run_with_platform(work)
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


@agents.command("tool")
def switch_tool(
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    state: Annotated[str, typer.Argument(help="on or off")],
) -> None:
    """Switch one tool on or off for an agent, keeping its mode."""
    if state not in ("on", "off"):
        fail("state must be 'on' or 'off'")

    async def work(platform: Platform) -> None:
        await platform.admin.set_tool_enabled(agent, tool, state == "on")

    run_with_platform(work)
    console.print(f"{tool!r} is {state} for agent {agent!r}")


@agents.command("only")
def only_tools(
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    tools: Annotated[list[str], typer.Argument(help="The tools to keep.")],
) -> None:
    """Leave all mode: freeze a custom allowlist."""

    async def work(platform: Platform) -> None:
        await platform.admin.set_custom_tools(agent, tools)

    run_with_platform(work)
    console.print(f"agent {agent!r} now uses only {', '.join(tools)}")


@agents.command("all")
def all_tools(agent: Annotated[str, typer.Argument(help="Agent name.")]) -> None:
    """Return to all mode with nothing switched off."""

    async def work(platform: Platform) -> None:
        await platform.admin.set_all_tools(agent)

    run_with_platform(work)
    console.print(f"agent {agent!r} uses all visible tools")


@packages.command("enable")
def enable(name: Annotated[str, typer.Argument(help="Package name.")]) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.set_package_enabled(name, True)

    run_with_platform(work)
    console.print(f"package {name!r} enabled")


@packages.command("disable")
def disable(name: Annotated[str, typer.Argument(help="Package name.")]) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.set_package_enabled(name, False)

    run_with_platform(work)
    console.print(f"package {name!r} disabled")
