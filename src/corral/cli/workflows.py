"""`corral workflows`: list, show, set, run, runs, cancel, archive, hooks, keys, templates.

Runs started here advance in this process, so `run` waits until the run ends or parks.
Webhook keys are issued here (or by the API) for a person and shown once.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, fail, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.workflows import Webhooks, Workflows

__all__ = ["app"]

app = typer.Typer(
    help="Workflows: saved instructions run by schedule, webhook or hand.", no_args_is_help=True
)
keys_app = typer.Typer(help="Webhook keys: issue (shown once) and revoke.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _service(platform: Platform) -> Workflows:
    from corral.runtime.workflows import Workflows

    return platform.services.require(Workflows)


def _webhooks(platform: Platform) -> Webhooks:
    from corral.runtime.workflows import Webhooks

    return platform.services.require(Webhooks)


def _object(text: str | None, what: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(f"{what} is not JSON: {exc}")
    if not isinstance(value, dict):
        fail(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


@app.command("list")
def list_workflows(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="active, paused, draft or archived.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Workflows, newest change first (archived ones only with --status archived)."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = _service(platform)
        return [
            {
                "workflow_id": w.id,
                "title": w.title,
                "status": w.status,
                "next_fire_at": w.next_fire_at.isoformat() if w.next_fire_at else None,
            }
            for w in await service.visible(await platform.caller(), status=status)
        ]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("workflow", "status", "next run", "title")
    for row in rows:
        table.add_row(row["workflow_id"], row["status"], row["next_fire_at"] or "-", row["title"])
    console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    as_json: JsonOpt = False,
) -> None:
    """A workflow's whole setup, schedule state, webhooks and recent runs."""
    from corral.runtime.workflows.render import describe_setup

    async def work(platform: Platform) -> Any:
        service = _service(platform)
        return await describe_setup(
            service, await service.readable(workflow_id, await platform.caller())
        )

    shown = run_with_platform(ctx, work)
    if as_json:
        print_json(shown.data)
    else:
        console.print(shown.text, highlight=False, markup=False)


@app.command("set")
def set_workflow(
    ctx: typer.Context,
    workflow_id: Annotated[str | None, typer.Argument(help="Omit to create one.")] = None,
    title: Annotated[str | None, typer.Option(help="Short name.")] = None,
    instruction: Annotated[str | None, typer.Option(help="What each run must do.")] = None,
    cron: Annotated[str | None, typer.Option(help="Five-field cron, e.g. '0 7 * * 1-5'.")] = None,
    timezone: Annotated[str, typer.Option(help="IANA time zone of --cron.")] = "UTC",
    at: Annotated[str | None, typer.Option(help="One-shot time, ISO 8601.")] = None,
    manual: Annotated[bool, typer.Option("--manual", help="No schedule.")] = False,
    model: Annotated[str | None, typer.Option(help="provider:model for runs.")] = None,
    status: Annotated[str | None, typer.Option(help="active, paused or draft.")] = None,
    fields: Annotated[
        str | None, typer.Option(help="Any other fields as a JSON object (as the tool's set).")
    ] = None,
) -> None:
    """Create a workflow, or change only the fields given."""
    changes = _object(fields, "--fields")
    for name, value in (
        ("title", title),
        ("instruction", instruction),
        ("model", model),
        ("status", status),
    ):
        if value is not None:
            changes[name] = value
    if sum([cron is not None, at is not None, manual]) > 1:
        fail("give one of --cron, --at and --manual")
    if cron is not None:
        changes["schedule"] = {"cron": cron, "timezone": timezone}
    elif at is not None:
        changes["schedule"] = {"at": at}
    elif manual:
        changes["schedule"] = None
    if workflow_id:
        changes["workflow_id"] = workflow_id

    async def work(platform: Platform) -> tuple[str, list[str]]:
        service = _service(platform)
        caller = await platform.caller()
        checked = await service.check_set(changes, caller)
        changed = await service.apply_set(checked, caller)
        return changed.id, checked.changed

    made, changed = run_with_platform(ctx, work)
    if not workflow_id:
        console.print(f"created workflow {made}", highlight=False)
    else:
        console.print(f"{made}: {', '.join(changed) or 'nothing changed'}", highlight=False)


@app.command("run")
def run(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    input_json: Annotated[str | None, typer.Option("--input", help="Input as JSON.")] = None,
) -> None:
    """Run a workflow now and wait until the run ends or waits for a person."""
    run_input = json.loads(input_json) if input_json else None

    async def work(platform: Platform) -> dict[str, Any]:
        service = _service(platform)
        started = await service.run(workflow_id, await platform.caller(), run_input=run_input)
        await platform.runtime.wait_run(started.id)
        return await service.snapshot(started.id)

    print_json(run_with_platform(ctx, work))


@app.command("runs")
def runs(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    as_json: JsonOpt = False,
) -> None:
    """A workflow's recent runs, newest first."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await _service(platform).runs(workflow_id, await platform.caller())

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("run", "trigger", "status", "steps", "cost", "started")
    for row in rows:
        cost = row.get("cost_usd")
        table.add_row(
            row["run_id"],
            row["trigger"],
            row["status"],
            str(row["steps"]),
            f"${cost:.4f}" if cost is not None else "unpriced",
            row["started_at"],
        )
    console.print(table)


@app.command("cancel")
def cancel(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run.")]) -> None:
    """Stop a workflow run; what it captured is kept."""

    async def work(platform: Platform) -> dict[str, Any]:
        return (await _service(platform).cancel(run_id, await platform.caller())).to_json()

    row = run_with_platform(ctx, work)
    console.print(f"{row['id']}: {row['status']} ({row['detail']})", highlight=False)


def _lifecycle(name: str, doc: str) -> None:
    def command(
        ctx: typer.Context, workflow_id: Annotated[str, typer.Argument(help="The workflow.")]
    ) -> None:
        async def work(platform: Platform) -> str:
            changed = await getattr(_service(platform), name)(workflow_id, await platform.caller())
            return str(changed.status)

        console.print(f"{workflow_id}: {run_with_platform(ctx, work)}", highlight=False)

    command.__doc__ = doc
    app.command(name)(command)


_lifecycle("archive", "Archive a workflow: it stops running and leaves the list.")
_lifecycle("restore", "Restore an archived workflow to the status it had.")


@app.command("delete")
def delete(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="An archived workflow.")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm the permanent delete.")] = False,
) -> None:
    """Delete an archived workflow for good, with its versions and hooks."""
    if not yes:
        fail("a permanent delete cannot be undone; add --yes to confirm")

    async def work(platform: Platform) -> None:
        await _service(platform).delete(workflow_id, await platform.caller())

    run_with_platform(ctx, work)
    console.print(f"deleted {workflow_id}", highlight=False)


@app.command("hooks")
def hooks(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    add: Annotated[
        str | None, typer.Option("--add", help="Add a webhook with this body JSON Schema.")
    ] = None,
    remove: Annotated[str | None, typer.Option("--remove", help="Remove this hook id.")] = None,
) -> None:
    """List a workflow's webhooks (paths and key ids, never keys); add or remove one."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        webhooks, caller = _webhooks(platform), await platform.caller()
        if add is not None:
            await webhooks.add(workflow_id, _object(add, "--add"), caller)
        if remove is not None:
            await webhooks.remove(workflow_id, remove, caller)
        return await webhooks.list_hooks(workflow_id, caller)

    print_json(run_with_platform(ctx, work))


@keys_app.command("issue")
def issue_key(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    hook_id: Annotated[str, typer.Argument(help="Its webhook.")],
) -> None:
    """Issue a webhook key: printed once here; Corral keeps only its hash."""

    async def work(platform: Platform) -> dict[str, str]:
        return await _webhooks(platform).issue_key(workflow_id, hook_id, await platform.caller())

    issued = run_with_platform(ctx, work)
    console.print(f"key {issued['key_id']} (shown once, keep it now):", highlight=False)
    typer.echo(issued["key"])


@keys_app.command("revoke")
def revoke_key(
    ctx: typer.Context,
    workflow_id: Annotated[str, typer.Argument(help="The workflow.")],
    key_id: Annotated[str, typer.Argument(help="The key's id (from `hooks`).")],
) -> None:
    """Revoke a webhook key at once."""

    async def work(platform: Platform) -> None:
        await _webhooks(platform).revoke_key(workflow_id, key_id, await platform.caller())

    run_with_platform(ctx, work)
    console.print(f"revoked {key_id}", highlight=False)


@app.command("templates")
def templates(
    ctx: typer.Context,
    save: Annotated[str | None, typer.Option("--save", help="Save a template by name.")] = None,
    fields: Annotated[str | None, typer.Option(help="Its workflow fields as JSON.")] = None,
    evolve: Annotated[
        str | None, typer.Option(help="'agent': its workflows' goals are not locked.")
    ] = None,
    create: Annotated[
        str | None, typer.Option("--create", help="Create a workflow from this template.")
    ] = None,
) -> None:
    """List templates; save one (--save NAME --fields JSON); create from one (--create NAME)."""

    async def work(platform: Platform) -> Any:
        service, caller = _service(platform), await platform.caller()
        if save is not None:
            await service.save_template(save, _object(fields, "--fields"), caller, evolve=evolve)
        if create is not None:
            made = await service.create_from_template(create, caller, _object(fields, "--fields"))
            return {"created": made.id}
        return [t.to_json() for t in await service.templates.list_templates()]

    print_json(run_with_platform(ctx, work))
