"""connect: the control plane for credentials, MCP servers and sources (see connect_plan).

The answer text lists each applied step, each listed kind (or its refusal) and, when a step
was refused while applying, what was done before it and what was not attempted.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from corral.connect import CredentialStore
from corral.errors import ToolError, UsageError
from corral.packages.core.connect_channel import ChannelConnect
from corral.packages.core.connect_git import GitRemotes
from corral.packages.core.connect_plan import Plane, apply, list_kind, plan
from corral.packages.core.connect_sources import SourceMounts
from corral.packages.core.mcp_servers import McpServers
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult

__all__ = ["connect"]


async def connect(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    plane = Plane(
        caller=ctx.caller,
        credentials=ctx.services.get(CredentialStore),
        mcp=ctx.services.get(McpServers),
        sources=ctx.sources,
        mounts=ctx.services.get(SourceMounts),
        channels=ctx.services.get(ChannelConnect),
        git=ctx.services.get(GitRemotes),
    )
    steps = plan(args, plane)
    done: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        try:
            done.append(await apply(step, plane))
        except (ToolError, UsageError) as exc:
            code = exc.code if isinstance(exc, ToolError) else "refused"
            message = exc.message if isinstance(exc, ToolError) else str(exc)
            refused = {
                "verb": step.verb,
                "kind": step.kind,
                "name": step.name,
                "code": code,
                "message": message,
            }
            rest = [{"verb": s.verb, "kind": s.kind, "name": s.name} for s in steps[index + 1 :]]
            return _partial(done, refused, rest, skipped_list=list(args.get("list", [])))
    if plane.mounts is not None and any(s.kind == "source" and s.verb == "add" for s in steps):
        plane = replace(plane, sources=await plane.mounts.policy())
    listed = [await list_kind(kind, plane) for kind in dict.fromkeys(args.get("list", []))]
    data = {"applied": done, "lists": listed}
    lines = [_line(d) for d in done] + [_list_text(item) for item in listed]
    return ToolResult(content=[TextBlock("\n".join(lines) or "nothing to do")], data=data)


def _partial(
    done: list[dict[str, Any]],
    refused: dict[str, Any],
    rest: list[dict[str, Any]],
    *,
    skipped_list: list[str],
) -> ToolResult:
    lines = ["Partly applied; what was done stays done (no rollback)."]
    lines += [f"done: {_line(d)}" for d in done]
    lines.append(
        f"refused: {refused['verb']} {refused['kind']} {refused['name']!r} "
        f"[{refused['code']}]: {refused['message']}"
    )
    lines += [f"not attempted: {r['verb']} {r['kind']} {r['name']!r}" for r in rest]
    if skipped_list:
        lines.append(f"not listed: {', '.join(skipped_list)}")
    return ToolResult(
        content=[TextBlock("\n".join(lines))],
        data={"applied": done, "refused": refused, "notAttempted": rest},
        is_error=True,
        error_code="partially_applied",
        status="error",
    )


def _line(step: dict[str, Any]) -> str:
    details = {k: v for k, v in step.items() if k not in ("verb", "kind", "name", "handoff")}
    line = f"{step['verb']} {step['kind']} {step['name']!r}: {json.dumps(details)}"
    if step.get("handoff"):
        line += (
            ". A person must open the authorization link shown to them on this call's card; "
            "you are not given it and must not try to open it. Tell the user to open it, then "
            "check this connection again."
        )
    elif "handoff" in step:
        line += ". No authorization is waiting for a person."
    return line


def _list_text(item: dict[str, Any]) -> str:
    if "refused" in item:
        return f"list {item['kind']}: refused [{item['code']}]: {item['refused']}"
    rows = item["rows"]
    head = f"list {item['kind']}: {len(rows)} connection(s)"
    body = [f"- {json.dumps(row)}" for row in rows]
    if item.get("descriptors"):
        body.append(f"  can add: {json.dumps(item['descriptors'])}")
    return "\n".join([head, *body])
