"""Webhooks for people and for callers: manage hooks and keys, receive a posted body.

Managing a hook or its keys is for the workflow's owner (or ``workflow.manage``), since a
key lets anyone holding it start runs with the owner's rights. Receiving answers the same
way for an unknown workflow, an unknown hook and a wrong key, so a caller cannot probe
which part was wrong. A delivery may carry an ``Idempotency-Key``; a repeat of it starts no
second run (:mod:`~corral.runtime.workflows.deliveries`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from corral.errors import CorralError, NotFound, UsageError
from corral.policy.identity import Caller
from corral.runtime.workflows.deliveries import body_hash, normalised_key
from corral.runtime.workflows.hooks import BodyProblem, body_problems
from corral.runtime.workflows.runs import RunStart
from corral.runtime.workflows.store import WorkflowRecord

if TYPE_CHECKING:
    from corral.runtime.workflows.service import Workflows

__all__ = ["Received", "Webhooks"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """How a posted body was answered: an HTTP status and what to say."""

    status: int
    message: str
    run_id: str | None = None
    problems: list[BodyProblem] = field(default_factory=list)
    replayed: bool = False
    """The Idempotency-Key was seen before; no run was started by this delivery."""


class Webhooks:
    def __init__(self, workflows: Workflows) -> None:
        self._workflows = workflows

    async def _owned(self, workflow_id: str, caller: Caller, doing: str) -> None:
        self._workflows.need(caller, "workflow.write", doing)
        workflow = await self._workflows.store.get(workflow_id)
        self._workflows.need_owner(caller, workflow, doing)

    async def list_hooks(self, workflow_id: str, caller: Caller) -> list[dict[str, Any]]:
        await self._workflows.readable(workflow_id, caller)
        return await self._workflows.hooks.list_hooks(workflow_id)

    async def add(
        self, workflow_id: str, body_schema: dict[str, Any], caller: Caller
    ) -> dict[str, Any]:
        """An extra webhook with its own body contract (the first one is the setup's)."""
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        await self._owned(workflow_id, caller, "adding webhooks")
        try:
            Draft202012Validator.check_schema(body_schema)
        except SchemaError as exc:
            raise UsageError(f"body_schema is not a valid JSON Schema: {exc.message}") from None
        return await self._workflows.hooks.add(workflow_id, body_schema)

    async def remove(self, workflow_id: str, hook_id: str, caller: Caller) -> None:
        await self._owned(workflow_id, caller, "removing webhooks")
        await self._workflows.hooks.remove(workflow_id, hook_id)

    async def issue_key(self, workflow_id: str, hook_id: str, caller: Caller) -> dict[str, str]:
        """A new key, shown this once; only its hash is kept."""
        await self._owned(workflow_id, caller, "issuing webhook keys")
        return await self._workflows.hooks.issue_key(workflow_id, hook_id, by=caller.user_id)

    async def revoke_key(self, workflow_id: str, key_id: str, caller: Caller) -> None:
        await self._owned(workflow_id, caller, "revoking webhook keys")
        await self._workflows.hooks.revoke_key(workflow_id, key_id)

    async def receive(
        self,
        workflow_id: str,
        hook_id: str,
        key: str,
        body: Any,
        idempotency: list[str] | None = None,
    ) -> Received:
        """Check the key, the body, the idempotency key and the rate; start a run with the body.

        ``idempotency`` holds the delivery's ``Idempotency-Key`` header values (none: no key).
        """
        workflows = self._workflows
        hook = await workflows.hooks.authenticate(workflow_id, hook_id, key)
        if hook is None:
            return Received(status=401, message="unknown webhook or wrong key")
        try:
            workflow = await workflows.store.get(workflow_id)
        except NotFound:
            return Received(status=401, message="unknown webhook or wrong key")
        if workflow.status != "active":
            return Received(
                status=409,
                message=f"workflow {workflow_id!r} is {workflow.status}; its webhooks start "
                "runs only while it is active",
            )
        problems = body_problems(hook.body_schema, body)
        if problems:
            return Received(
                status=422,
                message="the body does not match the webhook's contract; no run was started",
                problems=problems,
            )
        delivery_key = None
        if idempotency:
            try:
                delivery_key = normalised_key(idempotency)
            except ValueError as exc:
                return Received(status=400, message=f"{exc}; no run was started")
            repeat = await self._claim(hook_id, delivery_key, body)
            if repeat is not None:
                return repeat
        started = await self._start(workflow, hook_id, body)
        if delivery_key is not None:
            if started.run_id is None:
                await workflows.deliveries.release(hook_id, delivery_key)
            else:
                await workflows.deliveries.started(hook_id, delivery_key, started.run_id)
        return started

    async def _claim(self, hook_id: str, delivery_key: str, body: Any) -> Received | None:
        """None if this delivery holds the key now; else the answer to a repeat."""
        workflows = self._workflows
        hours = int((await workflows.rt.kernel.live_settings())["workflow_hook_idempotency_hours"])
        claim = await workflows.deliveries.claim(
            hook_id,
            delivery_key,
            body_hash(body),
            now=workflows.clock(),
            window=timedelta(hours=hours),
        )
        if claim.won:
            return None
        if not claim.same_body:
            return Received(
                status=422,
                message="this Idempotency-Key was already used with another body (keys are "
                "compared without outer spaces and case); send a new key for a new delivery. "
                "No run was started",
            )
        if claim.run_id is None:
            return Received(
                status=409,
                message="a delivery with this Idempotency-Key is still starting its run; "
                "retry in a moment to learn its run id",
            )
        return Received(
            status=200,
            message=f"already received: the first delivery with this Idempotency-Key started "
            f"run {claim.run_id} (remembered for workflow_hook_idempotency_hours={hours}); "
            "no new run was started",
            run_id=claim.run_id,
            replayed=True,
        )

    async def _start(self, workflow: WorkflowRecord, hook_id: str, body: Any) -> Received:
        workflows = self._workflows
        limit = int((await workflows.rt.kernel.live_settings())["workflow_hook_rate_per_minute"])
        if not workflows.hook_rate.allow(hook_id, limit):
            return Received(
                status=429,
                message=f"webhook {hook_id!r} started {limit} runs in the last minute (live "
                "setting workflow_hook_rate_per_minute); try again later",
            )
        start = RunStart(
            trigger="webhook", started_by=f"webhook:{hook_id}", input=body, hook_id=hook_id
        )
        try:
            run = await workflows.start_run(workflow, start)
        except CorralError as exc:
            return Received(status=409, message=f"no run was started: {exc}")
        return Received(status=202, message="run started", run_id=run.id)
