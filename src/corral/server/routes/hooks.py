"""``POST /hooks/{workflow_id}/{hook_id}``: a webhook caller starts a workflow run.

No bearer token: the hook's own key, sent as ``Authorization: Bearer <key>`` or in the
``X-Corral-Hook-Key`` header. A wrong key, hook or workflow is one 401; a body that breaks
the hook's contract is a 422 naming each problem by JSON pointer and starts nothing, and
so is a body that is not strict JSON (UTF-8, finite numbers, bounded nesting); a body sent
as anything but ``application/json`` is a 415; a hook past its rate is a 429; a body past
``http_body_max_bytes`` a 413. An optional
``Idempotency-Key`` header makes a retry safe: a repeat within
``workflow_hook_idempotency_hours`` starts nothing and is answered 200 with the first run's id
(``Idempotent-Replayed: true``), or 422 if its body differs; a malformed key is a 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from corral.runtime.workflows import Webhooks
from corral.server.deps import PlatformDep
from corral.strict_json import JsonRefused, loads

router = APIRouter(tags=["webhooks"])


def _key(request: Request) -> str:
    given = request.headers.get("x-corral-hook-key")
    if given:
        return given.strip()
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _sent_as_json(request: Request) -> bool:
    declared = request.headers.get("content-type")
    if declared is None:
        return True  # curl -d without -H; the body is parsed as JSON all the same
    media = declared.partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


@router.post("/hooks/{workflow_id}/{hook_id}", status_code=202)
async def receive(
    workflow_id: str, hook_id: str, request: Request, platform: PlatformDep
) -> JSONResponse:
    key = _key(request)
    if not key:
        return JSONResponse(
            {"detail": "send the webhook key as 'Authorization: Bearer <key>'"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    raw = await request.body()  # the server's body limit bounds it
    if raw and not _sent_as_json(request):
        return JSONResponse(
            {
                "detail": f"the body is sent as {request.headers.get('content-type')!r}; send it "
                "as JSON with 'Content-Type: application/json'; nothing was started"
            },
            status_code=415,
        )
    body: Any
    try:
        body = loads(raw) if raw else None
    except JsonRefused as exc:
        return JSONResponse(
            {
                "detail": "the body is not JSON; nothing was started",
                "problems": [{"pointer": "", "message": str(exc)}],
            },
            status_code=422,
        )
    received = await platform.services.require(Webhooks).receive(
        workflow_id, hook_id, key, body, request.headers.getlist("idempotency-key")
    )
    answer: dict[str, Any] = {"detail": received.message}
    if received.run_id is not None:
        answer["run_id"] = received.run_id
    if received.replayed:
        answer["replayed"] = True
    if received.problems:
        answer["problems"] = [p.to_json() for p in received.problems]
    headers: dict[str, str] = {}
    if received.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if received.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(answer, status_code=received.status, headers=headers)
