"""Workflows over HTTP: the tool's verbs for people, and the rarer operations.

Templates, archive / restore / permanent delete, channel bindings (``delivery``), run
cancellation, extra webhooks and webhook keys live here (and in `corral workflows`), never
in the tool: a key is shown once, to a person, in this API's answer.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from corral.runtime.workflows import Webhooks, Workflows
from corral.runtime.workflows.render import describe_setup
from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep, TicketDep

router = APIRouter(tags=["workflows"])

Status = Literal["active", "paused", "draft", "archived"]


class RunBody(BaseModel):
    input: Any = Field(default=None, description="Input for the run, checked like a webhook body.")
    wait_seconds: int = Field(default=0, ge=0, le=300, description="Wait for the run to end.")


class HookBody(BaseModel):
    body_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object"},
        description="The JSON Schema the posted body must match.",
    )


class DeliveryBody(BaseModel):
    channels: list[str] = Field(description="Bound channels that receive each run's answer.")


class TemplateBody(BaseModel):
    setup: dict[str, Any] = Field(description="Workflow fields (as the tool's set takes).")
    description: str = ""
    evolve: Literal["agent"] | None = Field(
        default=None, description="'agent': the goal a workflow from it sets is not locked."
    )


def _service(platform: Any) -> Workflows:
    service: Workflows = platform.services.require(Workflows)
    return service


def _webhooks(platform: Any) -> Webhooks:
    service: Webhooks = platform.services.require(Webhooks)
    return service


def _person_shares(body: dict[str, Any], ticket: Any) -> None:
    """A share lends the owner's rights to other people: a person's decision, not a script's."""
    if "shared_with" in body and ticket is not None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "a person shares a workflow: shared_with lends its owner's rights to other people, "
            "so a session ticket (what a skill's scripts send) may not set it; ask your user",
        )


def _summary(workflow: Any) -> dict[str, Any]:
    return {
        "workflow_id": workflow.id,
        "title": workflow.title,
        "status": workflow.status,
        "version": workflow.version,
        "next_fire_at": workflow.next_fire_at.isoformat() if workflow.next_fire_at else None,
    }


@router.get("/workflows")
async def list_workflows(
    platform: PlatformDep, caller: CallerDep, status: Status | None = None
) -> dict[str, Any]:
    """Only the workflows the caller may reach (owned, shared with them, or workflow.manage)."""
    visible = await _service(platform).visible(caller, status=status)
    return {"workflows": [_summary(w) for w in visible]}


@router.post("/workflows", status_code=201)
async def create_workflow(
    body: dict[str, Any], platform: PlatformDep, caller: CallerDep, ticket: TicketDep
) -> dict[str, Any]:
    """Create a workflow: the fields the tool's ``set`` takes, title and instruction required."""
    _person_shares(body, ticket)
    body.pop("workflow_id", None)
    return _summary(await _service(platform).set(body, caller))


@router.get("/workflows/{workflow_id}")
async def show_workflow(
    workflow_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    service = _service(platform)
    shown = await describe_setup(service, await service.readable(workflow_id, caller))
    return {**shown.data, "text": shown.text}


@router.patch("/workflows/{workflow_id}")
async def change_workflow(
    workflow_id: str,
    body: dict[str, Any],
    platform: PlatformDep,
    caller: CallerDep,
    ticket: TicketDep,
) -> dict[str, Any]:
    """Change only the fields sent (``shared_with`` only with a person's token)."""
    _person_shares(body, ticket)
    service = _service(platform)
    checked = await service.check_set({**body, "workflow_id": workflow_id}, caller)
    changed = await service.apply_set(checked, caller)
    return {**_summary(changed), "changed": checked.changed}


@router.get("/workflows/{workflow_id}/versions")
async def versions(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    service = _service(platform)
    await service.readable(workflow_id, caller)
    return {"versions": await service.store.versions(workflow_id)}


@router.put("/workflows/{workflow_id}/delivery")
async def bind_channels(
    workflow_id: str, body: DeliveryBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Bind channels: each run's answer (or failure) is posted to their paired chats."""
    changed = await _service(platform).set(
        {"workflow_id": workflow_id, "delivery": body.channels}, caller
    )
    return {**_summary(changed), "delivery": changed.setup["delivery"]}


@router.post("/workflows/{workflow_id}/archive")
async def archive(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return _summary(await _service(platform).archive(workflow_id, caller))


@router.post("/workflows/{workflow_id}/restore")
async def restore(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return _summary(await _service(platform).restore(workflow_id, caller))


@router.delete("/workflows/{workflow_id}")
async def delete(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """Delete an archived workflow for good."""
    await _service(platform).delete(workflow_id, caller)
    return {"deleted": workflow_id}


# -- runs -----------------------------------------------------------------------------------


@router.post("/workflows/{workflow_id}/runs", status_code=201)
async def start_run(
    workflow_id: str, body: RunBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    service = _service(platform)
    run = await service.run(workflow_id, caller, run_input=body.input)
    return await service.snapshot(run.id, wait_seconds=body.wait_seconds)


@router.get("/workflows/{workflow_id}/runs")
async def list_runs(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return {"runs": await _service(platform).runs(workflow_id, caller)}


@router.get("/workflow-runs/{run_id}")
async def show_run(
    run_id: str,
    platform: PlatformDep,
    caller: CallerDep,
    wait_seconds: int = Query(default=0, ge=0, le=300),
) -> dict[str, Any]:
    service = _service(platform)
    await service.readable_run(run_id, caller)
    return await service.snapshot(run_id, wait_seconds=wait_seconds)


@router.post("/workflow-runs/{run_id}/cancel")
async def cancel_run(run_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return (await _service(platform).cancel(run_id, caller)).to_json()


# -- webhooks and keys ----------------------------------------------------------------------


@router.get("/workflows/{workflow_id}/hooks")
async def list_hooks(workflow_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    return {"hooks": await _webhooks(platform).list_hooks(workflow_id, caller)}


@router.post("/workflows/{workflow_id}/hooks", status_code=201)
async def add_hook(
    workflow_id: str, body: HookBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    return await _webhooks(platform).add(workflow_id, body.body_schema, caller)


@router.delete("/workflows/{workflow_id}/hooks/{hook_id}")
async def remove_hook(
    workflow_id: str, hook_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    await _webhooks(platform).remove(workflow_id, hook_id, caller)
    return {"removed": hook_id}


@router.post(
    "/workflows/{workflow_id}/hooks/{hook_id}/keys", status_code=201, dependencies=[PERSON_ONLY]
)
async def issue_key(
    workflow_id: str, hook_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """A new key for the webhook: shown in this answer only, never again."""
    issued = await _webhooks(platform).issue_key(workflow_id, hook_id, caller)
    return {**issued, "note": "keep the key now; Corral keeps only its hash"}


@router.delete("/workflows/{workflow_id}/keys/{key_id}")
async def revoke_key(
    workflow_id: str, key_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    await _webhooks(platform).revoke_key(workflow_id, key_id, caller)
    return {"revoked": key_id}


# -- templates ------------------------------------------------------------------------------


@router.get("/workflow-templates")
async def list_templates(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    service = _service(platform)
    service.need(caller, "workflow.read", "reading workflow templates")
    return {"templates": [t.to_json() for t in await service.templates.list_templates()]}


@router.put("/workflow-templates/{name}")
async def save_template(
    name: str, body: TemplateBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    saved = await _service(platform).save_template(
        name, body.setup, caller, description=body.description, evolve=body.evolve
    )
    return saved.to_json()


@router.post("/workflow-templates/{name}/workflows", status_code=201)
async def create_from_template(
    name: str, body: dict[str, Any], platform: PlatformDep, caller: CallerDep, ticket: TicketDep
) -> dict[str, Any]:
    """A workflow from the template; the fields sent override the template's."""
    _person_shares(body, ticket)
    return _summary(await _service(platform).create_from_template(name, caller, body))
