"""`corral settings`: live settings that apply without a restart."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform
from corral.live_settings import LIVE_SETTINGS

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Show and change live settings.", no_args_is_help=True)


@app.command("show")
def show(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Current live settings."""

    async def work(platform: Platform) -> dict[str, Any]:
        return await platform.live_settings()

    values = run_with_platform(ctx, work)
    if as_json:
        print_json(values)
        return
    table = Table("setting", "value", "default", "meaning")
    for key, definition in LIVE_SETTINGS.items():
        table.add_row(key, str(values[key]), str(definition.default), definition.description)
    console.print(table)


@app.command("set")
def set_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Live setting name.")],
    value: Annotated[str, typer.Argument(help="New value.")],
) -> None:
    """Change a live setting; running servers pick it up within a second."""

    async def work(platform: Platform) -> Any:
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        owner = await platform.caller()
        return await platform.admin.set_live(key, parsed, by=owner.user_id)

    console.print(f"{key} = {run_with_platform(ctx, work)!r}")


@app.command("reset")
def reset(
    ctx: typer.Context, key: Annotated[str, typer.Argument(help="Live setting name.")]
) -> None:
    """Return a live setting to its default."""

    async def work(platform: Platform) -> None:
        await platform.admin.reset_live(key)

    run_with_platform(ctx, work)
    console.print(f"{key} reset to {LIVE_SETTINGS[key].default!r}")
