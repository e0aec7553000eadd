"""What a handler receives besides its arguments: the CallContext."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.policy.sources import SourcePolicy
from corral.settings import Settings
from corral.tools.services import Services

__all__ = ["CallContext", "Cancellation", "Narrowing", "OutputSink"]

OutputSink = Callable[[str, str], None]
"""Live output: ``sink(stream, text)``, e.g. ``("stdout", "building…")``."""


class Cancellation:
    """A Stop signal shared by a run and every call it started.

    Handlers that own resources (processes, sockets) register cleanups with
    :meth:`on_cancel`; the pipeline also cancels the handler's task.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None
        self._callbacks: list[Callable[[], Any]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "stopped") -> None:
        if self._event.is_set():
            return
        self.reason = reason
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Run ``callback`` on Stop (at once if already stopped); returns an unregister."""
        if self._event.is_set():
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def unregister() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unregister

    async def wait(self) -> None:
        await self._event.wait()


@dataclass(frozen=True, slots=True, kw_only=True)
class Narrowing:
    """How a run narrowed its tools: only ever narrower than its parent."""

    tools: frozenset[str] | None = None
    blocked_tools: frozenset[str] = frozenset()
    disabled_packages: frozenset[str] = frozenset()
    subagent: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "tools": sorted(self.tools) if self.tools is not None else None,
            "blocked_tools": sorted(self.blocked_tools),
            "disabled_packages": sorted(self.disabled_packages),
            "subagent": self.subagent,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Narrowing:
        raw = raw or {}
        tools = raw.get("tools")
        return cls(
            tools=frozenset(tools) if tools is not None else None,
            blocked_tools=frozenset(raw.get("blocked_tools") or ()),
            disabled_packages=frozenset(raw.get("disabled_packages") or ()),
            subagent=bool(raw.get("subagent", False)),
        )

    def within(self, parent: Narrowing) -> Narrowing:
        """This narrowing applied inside ``parent``: the intersection of both."""
        if self.tools is None:
            tools = parent.tools
        elif parent.tools is None:
            tools = self.tools
        else:
            tools = self.tools & parent.tools
        return Narrowing(
            tools=tools,
            blocked_tools=self.blocked_tools | parent.blocked_tools,
            disabled_packages=self.disabled_packages | parent.disabled_packages,
            subagent=self.subagent or parent.subagent,
        )


def _ignore_output(stream: str, text: str) -> None:
    return None


@dataclass(slots=True, kw_only=True)
class CallContext:
    """Everything a handler may use; it never reaches into the server."""

    tool: str
    call_id: str
    caller: Caller
    agent: str
    profile: Profile
    run_id: str | None
    conversation_id: str | None
    narrowing: Narrowing
    live: Mapping[str, Any]
    settings: Settings
    sources: SourcePolicy
    cancellation: Cancellation
    output: OutputSink = _ignore_output
    notes: list[str] = field(default_factory=list)
    services: Services = field(default_factory=Services)
    """What packages and the runtime provide (shells, web, questions, the run's model…)."""
