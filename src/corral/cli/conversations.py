"""`corral conversations`: list them, show a timeline or the meta document, queue a message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral import strict_json
from corral.cli._run import console, print_json, run_with_platform
from corral.cli._turns import TurnPrinter, follow, runtime

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Conversations: timelines, inbox messages.", no_args_is_help=True)


@app.command("list")
def list_conversations(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Your conversations, most recent first."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return [c.to_json() for c in await runtime(platform).list_conversations()]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "agent", "model", "rows", "active run", "updated")
    for row in rows:
        table.add_row(
            row["id"],
            row["agent"],
            row["model"] or "-",
            str(row["last_seq"]),
            row["active_run_id"] or "-",
            row["updated_at"][:19],
        )
    console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    after: Annotated[int, typer.Option(help="Only rows after this sequence number.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The conversation's timeline."""

    async def work(platform: Platform) -> dict[str, Any]:
        rt = runtime(platform)
        conversation = await rt.conversation(conversation_id)
        rows = await rt.rows(conversation_id, after=after)
        return {"conversation": conversation.to_json(), "rows": [r.to_json() for r in rows]}

    shown = run_with_platform(ctx, work)
    if as_json:
        print_json(shown)
        return
    info = shown["conversation"]
    console.print(
        f"[bold]{info['id']}[/] agent {info['agent']} · model {info['model'] or '-'} · "
        f"profile {info['profile']}",
        highlight=False,
    )
    printer = TurnPrinter(console)
    for row in shown["rows"]:
        if row["kind"] == "user_message":
            console.print(f"[bold blue]you:[/] {row['data']['text']}", highlight=False)
        elif row["kind"] == "card" and row["data"].get("card") == "run_ended":
            data = row["data"]
            reason = f" ({data['reason']})" if data.get("reason") else ""
            budget = f" · budget {data['budget']}" if data.get("budget") else ""
            console.print(f"[dim]— run {data['status']}{reason}{budget}[/]", highlight=False)
        else:
            printer({"type": "row", "row": row})


@app.command("send")
def send(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation to write into.")],
    text: Annotated[str, typer.Argument(help="The message.")],
    from_conversation: Annotated[
        str | None, typer.Option("--from", help="Your conversation the message comes from.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Queue an inbox message; the conversation continues by itself as you."""

    async def work(platform: Platform) -> dict[str, Any]:
        rt = runtime(platform)

        async def queue() -> dict[str, Any]:
            delivery = await rt.send_message(
                conversation_id, text, from_conversation_id=from_conversation
            )
            return delivery.to_json()

        printer = None if as_json else TurnPrinter(console)
        return await follow(platform, conversation_id, printer, queue)

    delivery = run_with_platform(ctx, work)
    if as_json:
        print_json(delivery)
    else:
        console.print(f"[dim]message {delivery['id']} queued into {conversation_id}[/]")


@app.command("meta")
def meta(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
) -> None:
    """Goal, todo list, loop bound, the session ledger (sessionLedger), compactions and
    questions of a conversation, as JSON."""

    async def work(platform: Platform) -> dict[str, Any]:
        return await platform.conversation_meta(conversation_id)

    print_json(run_with_platform(ctx, work))


@app.command("budget")
def budget(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    limits: Annotated[
        str | None,
        typer.Argument(
            help='New limits as JSON, e.g. \'{"total_tokens": 200000, "cost_usd": 2, '
            '"per_tool": {"execute": 40}}\'; {} clears them. Without it: show them.'
        ),
    ] = None,
) -> None:
    """Show or set the budget each run of the conversation gets at most (owner only)."""
    parsed: object = None
    if limits is not None:
        try:
            parsed = strict_json.loads(limits)
        except strict_json.JsonRefused as exc:
            raise typer.BadParameter(f"the limits are not JSON: {exc}") from None

    async def work(platform: Platform) -> dict[str, Any]:
        rt = runtime(platform)
        if limits is None:
            return await rt.conversation_budget(conversation_id)
        return await rt.set_conversation_budget(conversation_id, parsed)

    print_json(run_with_platform(ctx, work))
