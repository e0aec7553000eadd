"""The span processor of the local trace store (imported only when the SDK is installed)."""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

__all__ = ["LocalSpans"]


class LocalSpans(SpanProcessor):
    """Hands every ended span to ``keep`` (an append to the store's queue: no conversion,
    no I/O on the span's path) until shut down."""

    def __init__(self, keep: Callable[[ReadableSpan], None]) -> None:
        self._keep: Callable[[ReadableSpan], None] | None = keep

    def on_end(self, span: ReadableSpan) -> None:
        keep = self._keep
        if keep is not None:
            keep(span)

    def shutdown(self) -> None:
        self._keep = None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
