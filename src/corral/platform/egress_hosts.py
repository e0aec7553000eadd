"""Hosts kept "for this agent" by an answer to an egress question: listed and removed by the
person who kept them, or by an admin (``admin.settings``) for anyone. The CLI
(``corral egress hosts``) and the HTTP routes (``/egress/hosts``) both go through here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.errors import NotFound, PolicyDenied, UsageError
from corral.runtime.agents import load_agent
from corral.shell.egress.policy import normalise_host
from corral.shell.service import ShellService

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.policy.identity import Caller

__all__ = ["ADMIN_FEATURE", "forget_kept_host", "kept_hosts"]

ADMIN_FEATURE = "admin.settings"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Scope:
    user_id: str
    user_name: str
    agent: str | None


async def _scope(platform: Platform, caller: Caller, user: str | None, agent: str | None) -> _Scope:
    whose = caller if user is None else await platform.caller(user)
    if whose.user_id != caller.user_id and not caller.grants.has(ADMIN_FEATURE):
        raise PolicyDenied(
            f"the hosts kept for {whose.name!r} are theirs: only they or an admin "
            f"({ADMIN_FEATURE}) may see or remove them; leave out the user for your own"
        )
    if agent is not None:
        await load_agent(platform.kernel.sessions, agent)  # NotFound names the listing
    return _Scope(user_id=whose.user_id, user_name=whose.name, agent=agent)


async def kept_hosts(
    platform: Platform, caller: Caller, *, user: str | None = None, agent: str | None = None
) -> list[dict[str, Any]]:
    """The hosts kept for ``user`` (default: the caller), for ``agent`` or every agent."""
    scope = await _scope(platform, caller, user, agent)
    approved = platform.services.require(ShellService).egress_approved
    return [
        {
            "user_id": row.user_id,
            "user": scope.user_name,
            "agent": row.agent,
            "host": row.host,
            "decision_id": row.decision_id,
            "kept_at": row.created_at.isoformat(timespec="seconds"),
        }
        for row in await approved.rows(scope.user_id, scope.agent)
    ]


async def forget_kept_host(
    platform: Platform, caller: Caller, host: str, *, agent: str, user: str | None = None
) -> dict[str, Any]:
    """Stop allowing ``host`` for ``user`` (default: the caller) through ``agent``: that
    person's next call through the agent asks again (when the policy says ``ask``)."""
    try:
        name = normalise_host(host)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    scope = await _scope(platform, caller, user, agent)
    approved = platform.services.require(ShellService).egress_approved
    if not await approved.forget(scope.user_id, agent, name):
        who = "" if user is None else f" --user {user}"
        raise NotFound(
            f"{name!r} is not kept for agent {agent!r} of {scope.user_name!r}; "
            f"`corral egress hosts --agent {agent}{who}` lists the kept hosts"
        )
    return {"removed": name, "agent": agent, "user_id": scope.user_id}
