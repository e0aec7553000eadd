"""`corral users`: the people who use Corral and their roles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Users and their roles.", no_args_is_help=True)


@app.command("list")
def list_users(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        from sqlalchemy import select

        from corral.store import tables as t

        async with platform.sessions() as session:
            rows = await session.scalars(select(t.User).order_by(t.User.created_at))
            return [{"id": u.id, "name": u.name, "role": u.role} for u in rows]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "name", "role")
    for row in rows:
        table.add_row(row["id"], row["name"], row["role"])
    console.print(table)


@app.command("add")
def add_user(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="User name.")],
    role: Annotated[str, typer.Option(help="Role name.")] = "member",
) -> None:
    async def work(platform: Platform) -> str:
        return await platform.identity.create_user(name, role)

    console.print(f"created user {name!r} ({run_with_platform(ctx, work)}) with role {role!r}")


@app.command("role")
def set_role(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="User name or id.")],
    role: Annotated[str, typer.Argument(help="New role.")],
) -> None:
    async def work(platform: Platform) -> None:
        await platform.identity.set_role(user, role)

    run_with_platform(ctx, work)
    console.print(f"{user!r} now has role {role!r}")
