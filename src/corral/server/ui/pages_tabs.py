"""A conversation's other tabs: its background shells (live tail, Kill), its egress log (the
proxy's connections) and its context map (rows, sizes, compactions). The Delegates tab is
:mod:`corral.server.ui.pages_delegates`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from markupsafe import escape
from sse_starlette import EventSourceResponse

from corral.server.ui.access import PageCaller, SignedIn, UiRoute
from corral.server.ui.render import templates
from corral.server.ui.timeline import TimelineView
from corral.shell.service import ShellService

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

_ENDED = frozenset({"exited", "stopped", "lost", "failed", "timed_out"})
_TAIL_WAIT_S = 15.0
"""How long one long poll of a running shell's log waits for new output."""


def _page(name: str, who: SignedIn, **values: Any) -> Response:
    return HTMLResponse(templates.get_template(name).render(who=who, **values))


@router.get("/c/{conversation_id}/shells")
async def shells_tab(conversation_id: str, who: PageCaller) -> Response:
    conversation = await who.platform.runtime.conversation(conversation_id, user=who.user)
    background = who.platform.services.require(ShellService).background
    found = await background.store.find(conversation_id=conversation_id)
    shells = [r for r in found if await background.can_read(r, who.caller)]
    return _page("shells.html", who, conversation=conversation, shells=shells, tab="shells")


@router.get("/c/{conversation_id}/egress")
async def egress_tab(conversation_id: str, who: PageCaller) -> Response:
    """The egress proxy's connections for the conversation's commands, allowed and refused."""
    conversation = await who.platform.runtime.conversation(conversation_id, user=who.user)
    store = who.platform.services.require(ShellService).egress_store
    connections = await store.for_conversation(conversation_id)
    return _page(
        "egress.html", who, conversation=conversation, connections=connections, tab="egress"
    )


async def _tail(who: SignedIn, shell_id: str) -> AsyncIterator[dict[str, str]]:
    background = who.platform.services.require(ShellService).background
    after = 0
    while True:
        got = await background.output(shell_id, who.caller, after=after, wait=_TAIL_WAIT_S)
        text = "".join(str(row.get("text", "")) for row in got["rows"])
        if text:
            yield {"event": "tail", "data": str(escape(text)), "id": str(got["next_after"])}
        after = int(got["next_after"])
        status = str(got["shell"]["status"])
        if status != "running" and not got["rows"]:
            exit_code = got["shell"].get("exit_code")
            ended = (
                f"{escape(status)} · exit code {exit_code}"
                f'<span id="shell-state-{escape(shell_id)}" class="state" '
                f'hx-swap-oob="outerHTML">{escape(status)}</span>'
                f'<span id="kill-{escape(shell_id)}" hx-swap-oob="outerHTML"></span>'
            )
            yield {"event": "ended", "data": ended}
            return


@router.get("/shells/{shell_id}/tail")
async def shell_tail(shell_id: str, who: PageCaller) -> EventSourceResponse:
    """A shell's output as it arrives (a long poll of its log per burst), then its end."""
    await who.platform.services.require(ShellService).background.readable(shell_id, who.caller)
    return EventSourceResponse(_tail(who, shell_id))


@router.get("/c/{conversation_id}/context")
async def context_tab(conversation_id: str, who: PageCaller) -> Response:
    rt = who.platform.runtime
    conversation = await rt.conversation(conversation_id, user=who.user)
    rows = await rt.rows(conversation_id, user=who.user)
    view = TimelineView.of(rows)
    trimmed: dict[int, str] = {}
    for compaction in view.compactions.values():
        for target in compaction.data.get("targets") or []:
            state = "trimmed" if compaction.applied else "shown in full"
            trimmed[int(target.get("seq", 0))] = f"{compaction.data.get('action')} · {state}"
    sized = [
        {
            "seq": row.seq,
            "kind": row.kind,
            "tool": row.data.get("tool") or row.data.get("card") or "",
            "chars": len(json.dumps(dict(row.data), ensure_ascii=False, default=str)),
            "compaction": trimmed.get(row.seq, ""),
        }
        for row in rows
    ]
    meta = await who.platform.conversation_meta(conversation_id, user=who.user)
    return _page(
        "context.html", who, conversation=conversation, rows=sized, meta=meta, tab="context"
    )
