"""`corral roles`: roles and the feature ids they grant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Roles and the features they grant.", no_args_is_help=True)


@app.command("list")
def list_roles(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        from sqlalchemy import select

        from corral.store import tables as t

        async with platform.sessions() as session:
            rows = await session.scalars(select(t.Role).order_by(t.Role.name))
            return [{"name": r.name, "features": r.features, "builtin": r.builtin} for r in rows]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("role", "built-in", "features")
    for row in rows:
        table.add_row(row["name"], "yes" if row["builtin"] else "no", ", ".join(row["features"]))
    console.print(table)


@app.command("set")
def set_role_features(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Custom role name.")],
    features: Annotated[list[str], typer.Argument(help="Feature ids or prefix.* patterns.")],
) -> None:
    """Create or replace a custom role."""

    async def work(platform: Platform) -> None:
        await platform.identity.create_role(name, features)

    run_with_platform(ctx, work)
    console.print(f"role {name!r} grants {', '.join(features)}")
