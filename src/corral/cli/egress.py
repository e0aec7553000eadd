"""`corral egress log [CONVERSATION]`: the connections sandboxed commands made through the
egress proxy, allowed and refused, with the rule that decided each. `corral egress hosts`:
the hosts kept "for this agent" by answers to egress questions, and their removal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(
    help="Egress: the proxy's connection log and the hosts kept for an agent.",
    no_args_is_help=True,
)


@app.command("log")
def log(
    ctx: typer.Context,
    conversation: Annotated[
        str | None, typer.Argument(help="Only this conversation's (default: every one).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Most connections to print (newest).")] = 500,
    user: Annotated[str | None, typer.Option(help="Act as this user (default: the owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Connections through the egress proxy, oldest first, with decision and rule."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        from corral.errors import PolicyDenied
        from corral.runtime.conversations import MANAGE_FEATURE
        from corral.shell.service import ShellService

        caller = await platform.caller(user)
        if conversation is not None:
            await platform.conversation(conversation, user=user)
        elif not caller.grants.has(MANAGE_FEATURE):
            raise PolicyDenied(
                "every conversation's egress log needs conversations.manage; name one of "
                "your conversations: corral egress log CONVERSATION"
            )
        store = platform.services.require(ShellService).egress_store
        rows = await store.for_conversation(conversation, limit=limit)
        return [
            {
                "at": row.started_at.isoformat(timespec="seconds"),
                "run_id": row.run_id,
                "protocol": row.protocol,
                "host": row.host,
                "port": row.port,
                "method": row.method,
                "path": row.path,
                "decision": "allowed" if row.allowed else "refused",
                "rule": row.rule,
                "reason": row.reason,
                "bytes_up": row.bytes_up,
                "bytes_down": row.bytes_down,
            }
            for row in rows
        ]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no egress connections")
        return
    table = Table("at", "decision", "host:port", "request", "bytes ↑/↓", "rule / reason")
    for row in rows:
        request = f"{row['method']} {row['path']}" if row["method"] else row["protocol"]
        why = row["rule"] if row["decision"] == "allowed" else f"{row['rule']}: {row['reason']}"
        table.add_row(
            row["at"][:19],
            row["decision"],
            f"{row['host']}:{row['port']}",
            request,
            f"{row['bytes_up']}/{row['bytes_down']}",
            why,
        )
    console.print(table)


@app.command("hosts")
def hosts(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Option(help="Only this agent's (needed with --remove).")
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="Act as this user: their kept hosts (default: the owner).")
    ] = None,
    remove: Annotated[
        str | None, typer.Option(help="Stop allowing this host for --agent; it asks again.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Hosts kept "for this agent" by answers to egress questions; --remove one."""
    if remove is not None and agent is None:
        raise typer.BadParameter("--remove needs --agent, the agent the host was kept for")

    async def work(platform: Platform) -> Any:
        from corral.platform.egress_hosts import forget_kept_host, kept_hosts

        caller = await platform.caller(user)
        if remove is not None:
            assert agent is not None
            return await forget_kept_host(platform, caller, remove, agent=agent)
        return await kept_hosts(platform, caller, agent=agent)

    found = run_with_platform(ctx, work)
    if as_json:
        print_json(found)
        return
    if remove is not None:
        console.print(f"{found['removed']} is no longer kept for agent {found['agent']}")
        return
    if not found:
        console.print("no hosts kept for an agent")
        return
    table = Table("agent", "host", "user", "kept at", "decision")
    for row in found:
        table.add_row(row["agent"], row["host"], row["user"], row["kept_at"], row["decision_id"])
    console.print(table)
