"""The ``delegate`` tool's service, built when this process first needs it.

The service (child runs, their reach, answers, run folders) is nothing a command that lists
or shows uses, and it holds only the children started in this process. So it is built on
first need: a ``delegate`` call, ``services.get(Delegation)`` (the delegates' routes, pages
and commands), a run's end (which stops the children it waited for and answers a waiting
parent), or a sweep (serving, a cluster tick). Its run-end hook and row observer keep the
places they had when the service was built at open.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from corral.tools.services import Deferred

if TYPE_CHECKING:
    from corral.runtime.delegation import Delegation
    from corral.runtime.runs import RunRecord
    from corral.runtime.runtime import Runtime
    from corral.runtime.timeline import TimelineRow
    from corral.tools.results import ToolResult
    from corral.tools.services import DelegateScope

__all__ = ["DELEGATION", "DelegationOnDemand"]

DELEGATION = "corral.runtime.delegation.service.Delegation"
"""The service's :func:`~corral.tools.services.service_key`, known without importing it."""


class DelegationOnDemand:
    """``services.runs`` (the delegate tool's :class:`~corral.tools.services.Delegator`) and
    the service's registrations on the runtime, building the service on first need."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._service: Deferred[Delegation] = Deferred(self._build)
        runtime.run_end_hooks.append(self._on_run_end)
        runtime.row_observers.append(self._grow_transcript)

    def _build(self) -> Delegation:
        from corral.runtime.delegation import Delegation

        return Delegation(self._runtime, hooked=False)

    def deferred(self) -> dict[str, Deferred[Any]]:
        """The service, for :attr:`Services.deferred`."""
        return {DELEGATION: self._service}

    async def delegate(self, args: Mapping[str, Any], ctx: DelegateScope) -> ToolResult:
        return await self._service.value().delegate(args, ctx)

    async def sweep(self) -> list[str]:
        return await self._service.value().sweep()

    async def close(self) -> None:
        service = self._service.built
        if service is not None:
            await service.close()

    # -- the runtime's hooks (the names the service's own have) -------------------------------

    async def _on_run_end(self, run: RunRecord, status: str) -> None:
        await self._service.value()._on_run_end(run, status)

    def _grow_transcript(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        service = self._service.built
        if service is not None:  # else no child run of this process writes a transcript
            service._grow_transcript(conversation_id, rows)
