"""Stop, shared by a run and every call it started."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["Cancellation"]


class Cancellation:
    """A Stop signal shared by a run and every call it started.

    Handlers that own resources (processes, sockets) register cleanups with
    :meth:`on_cancel`; the pipeline also cancels the handler's task.
    """

    def __init__(self) -> None:
        self._cancelled = False
        # Made only when someone waits: most calls never do, and an Event costs each one.
        self._event: asyncio.Event | None = None
        self.reason: str | None = None
        self._callbacks: list[Callable[[], Any]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str = "stopped") -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self.reason = reason
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Run ``callback`` on Stop (at once if already stopped); returns an unregister."""
        if self._cancelled:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def unregister() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unregister

    async def wait(self) -> None:
        if self._cancelled:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()
