"""`corral tools`: list the loaded tools and call one through the pipeline."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.tools.results import ToolResult

__all__ = ["app"]

app = typer.Typer(help="List and call tools.", no_args_is_help=True)


@app.command("list")
def list_tools(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    user: Annotated[str | None, typer.Option(help="Judge visibility for this user.")] = None,
    agent: Annotated[str | None, typer.Option(help="Judge visibility for this agent.")] = None,
) -> None:
    """Every loaded tool with its package and visibility, pending tools, and load errors."""

    async def work(platform: Platform) -> dict[str, Any]:
        visible = {t.name for t in await platform.visible_tools(user=user, agent=agent)}
        registry = platform.registry
        tools = [
            {
                "name": tool.name,
                "package": tool.package,
                "visible": tool.name in visible,
                "description": tool.spec.description,
                "input_schema": tool.spec.input_schema,
                "annotations": tool.spec.annotations.to_json(),
                "features": list(tool.spec.features),
            }
            for tool in sorted(registry.tools.values(), key=lambda t: (t.package, t.name))
        ]
        pending = [
            {"name": name, "package": pkg.name, "status": "handler not built yet"}
            for pkg in registry.packages.values()
            for name in sorted(pkg.pending)
        ]
        errors = [
            {"file": e.file, "pointer": e.pointer, "message": e.message, "package": e.package}
            for e in registry.errors
        ]
        return {"tools": tools, "pending": pending, "errors": errors}

    listing = run_with_platform(ctx, work)
    if as_json:
        print_json(listing)
        return
    table = Table("tool", "package", "visible", "description")
    for tool in listing["tools"]:
        description = tool["description"]
        short = description if len(description) < 90 else description[:87] + "…"
        table.add_row(tool["name"], tool["package"], "yes" if tool["visible"] else "no", short)
    console.print(table)
    if listing["pending"]:
        names = ", ".join(p["name"] for p in listing["pending"])
        console.print(f"[dim]declared, handler not built yet (never visible): {names}[/]")
    for error in listing["errors"]:
        where = f"{error['file']}#{error['pointer']}" if error["pointer"] else error["file"]
        err_console.print(f"[red]load error[/] {where}: {error['message']}", highlight=False)


def _print_result(result: ToolResult, as_json: bool) -> None:
    if as_json:
        print_json(result.to_json())
        return
    if result.is_error:
        err_console.print(result.text, highlight=False, markup=False)
    else:
        console.print(result.text, highlight=False, markup=False)


@app.command("call")
def call_tool(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Tool name.")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object.")] = "{}",
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result.")] = False,
    user: Annotated[str | None, typer.Option(help="Call as this user.")] = None,
    agent: Annotated[str | None, typer.Option(help="Call as this agent.")] = None,
    profile: Annotated[str, typer.Option(help="safe, balanced or auto.")] = "auto",
) -> None:
    """Call NAME through the dispatch pipeline. Exit 0 on success, 1 on an error or refusal."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        err_console.print(f"[bold red]error:[/] arguments are not valid JSON: {exc}")
        raise typer.Exit(2) from None

    async def work(platform: Platform) -> ToolResult:
        return await platform.call_tool(name, parsed, user=user, agent=agent, profile=profile)

    result = run_with_platform(ctx, work)
    _print_result(result, as_json)
    if result.is_error:
        raise typer.Exit(1)
