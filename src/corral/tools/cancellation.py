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
