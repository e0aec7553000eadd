"""The ``workflow`` tool's verbs: set → run → get → list, every one checked before any write.

The pipeline has already dropped a verb the caller lacks the feature for (and noted it).
Here every remaining verb is checked — arguments, the workflow it names, the caller's
rights over it — before anything is written. A verb whose arguments are wrong fails the
whole call, so a malformed call changes nothing; a verb the caller may not use is refused
on its own and named, and the others still apply. A run that cannot start once the checks
passed (its owner lost a right meanwhile) is named too; what already applied stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from corral.errors import FeatureMissing, InvalidArguments, NotFound, ToolError
from corral.runtime.workflows.render import describe_run, describe_setup, describe_workflows
from corral.runtime.workflows.runs import RunStart
from corral.runtime.workflows.service import CheckedSet, Workflows
from corral.runtime.workflows.store import WorkflowRecord
from corral.tools.results import ToolResult
from corral.tools.services import CallScope

__all__ = ["WorkflowTool", "workflow_call"]


class WorkflowTool:
    """The ``workflow`` tool's service (:class:`~corral.tools.services.WorkflowKeeper`)."""

    def __init__(self, workflows: Workflows) -> None:
        self.workflows = workflows

    async def call(
        self, args: dict[str, Any], ctx: CallScope, notes: Sequence[str], /
    ) -> ToolResult:
        return await workflow_call(self.workflows, args, ctx, list(notes))


async def workflow_call(
    service: Workflows, args: Mapping[str, Any], ctx: CallScope, notes: list[str]
) -> ToolResult:
    caller = ctx.caller
    refused: list[str] = list(notes)
    problems: list[str] = []
    checked_set: CheckedSet | None = None
    run_target: WorkflowRecord | None = None

    # 1. Check every verb; nothing is written here.
    if "set" in args:
        try:
            checked_set = await service.check_set(args["set"], caller)
        except FeatureMissing as exc:
            refused.append(f"set was refused: {exc.message}")
        except (InvalidArguments, NotFound) as exc:
            problems.append(f"set: {_message(exc)}")
    if "run" in args:
        run = args["run"]
        try:
            run_target = await service.check_run(run["workflow_id"], run.get("input"), caller)
        except FeatureMissing as exc:
            refused.append(f"run was refused: {exc.message}")
        except (InvalidArguments, NotFound) as exc:
            problems.append(f"run: {_message(exc)}")
    if "get" in args:
        get = args["get"]
        try:
            await service.readable(get["workflow_id"], caller)
            if get.get("run_id"):
                await service.readable_run(get["run_id"], caller, get["workflow_id"])
        except NotFound as exc:
            problems.append(f"get: {_message(exc)}")
    if problems:
        raise InvalidArguments(
            "nothing was changed or started: " + "; ".join(problems) + ". Fix the verbs named "
            "and call again.",
            data={"problems": problems},
        )

    # 2. Apply in the fixed order.
    sections: list[str] = []
    card: dict[str, Any] = {"card": "workflow"}
    lend = ctx.run_id is not None
    if checked_set is not None:
        created = checked_set.current is None
        workflow = await service.apply_set(checked_set, caller)
        verb = "Created" if created else ("Changed" if checked_set.changed else "Unchanged:")
        what = f" ({', '.join(checked_set.changed)})" if checked_set.changed and not created else ""
        sections.append(f"{verb} workflow {workflow.id} “{workflow.title}”{what}.")
        if workflow.setup.get("delivery"):
            sections.append(
                "Each run's answer (or failure) goes to the chats of "
                + ", ".join(workflow.setup["delivery"])
                + " paired to the workflow's owner, once those channels are connected."
            )
        card["workflow"] = {
            "workflow_id": workflow.id,
            "title": workflow.title,
            "status": workflow.status,
            "version": workflow.version,
            "changed": checked_set.changed,
            "created": created,
        }
    if run_target is not None:
        run_args = args["run"]
        try:
            started = await service.start_run(
                run_target,
                RunStart(
                    trigger="manual",
                    started_by=caller.user_id,
                    input=run_args.get("input"),
                    parent_run_id=ctx.run_id,  # it spends from the starting run's budget
                ),
            )
        except ToolError as exc:
            refused.append(f"run could not start: {exc.message}")
        else:
            snapshot = await service.snapshot(
                started.id, wait_seconds=run_args.get("wait_seconds") or 0, lend=lend
            )
            sections.append(describe_run(snapshot, started=True))
            card["run"] = snapshot
    if "get" in args:
        get = args["get"]
        if get.get("run_id"):
            snapshot = await service.snapshot(
                get["run_id"], wait_seconds=get.get("wait_seconds") or 0, lend=lend
            )
            sections.append(describe_run(snapshot, started=False))
            card["run"] = snapshot
        else:
            shown = await describe_setup(
                service, await service.readable(get["workflow_id"], caller)
            )
            sections.append(shown.text)
            card["setup"] = shown.data
    if "list" in args:
        listed = await service.visible(caller, status=args["list"].get("status"))
        sections.append(describe_workflows(listed))
        card["list"] = [{"workflow_id": w.id, "title": w.title, "status": w.status} for w in listed]
    if refused:
        card["refused"] = refused
    if not sections:
        return ToolResult.text_result(
            " ".join(["Nothing was done.", *(r for r in refused if r not in notes)]),
            data=card,
            is_error=True,
            error_code="feature_missing",
            status="error",
        )
    sections.extend(r for r in refused if r not in notes)  # the pipeline notes its own
    return ToolResult.text_result("\n\n".join(sections), data=card)


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ToolError) else str(exc)
