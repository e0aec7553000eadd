"""`corral sources`: data sources and their URI policies per role or user."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import typer
from rich.table import Table

from corral.cli._run import console, fail, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Sources and their URI policies.", no_args_is_help=True)


@app.command("list")
def list_sources(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        from sqlalchemy import select

        from corral.store import tables as t

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

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("source", "connector", "root", "rights")
    for row in rows:
        table.add_row(row["name"], row["connector"], row["root"], " ".join(row["rights"]))
    console.print(table)


@app.command("add")
def add_source(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Source name, used as name://path.")],
    root: Annotated[str, typer.Argument(help="Absolute root folder.")],
    connector: Annotated[str, typer.Option(help="local or host.")] = "local",
) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.add_source(name, root, connector=connector)

    run_with_platform(ctx, work)
    console.print(f"source {name!r} → {root} ({connector}); grant rights with `sources grant`")


@app.command("grant")
def grant(
    ctx: typer.Context,
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

    run_with_platform(ctx, work)
    console.print(f"{kind} {principal!r} holds {rights!r} on {source!r}")
