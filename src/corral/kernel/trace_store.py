"""The local trace store: every span the platform's tracer provider ends is also kept in
the ``trace_spans`` table, so a run's trace is shown (``corral trace RUN``, the web UI's
Trace tab) without any collector.

The hot path only appends the ended span to a bounded queue (:class:`LocalSpans`, a span
processor on the SDK provider); a background task of the platform turns the queued spans
into rows and inserts them in one statement per batch, every :data:`FLUSH_SECONDS` (on a
SQLite file in the store writer's thread, conversion included), and
deletes the spans older than the live setting ``trace_keep_days``. String attributes go
through the platform's redactor on the way in, as rows do; content attributes exist only
while ``trace_content`` is on (:mod:`corral.tools.call_spans`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.secrets import Redactor
from corral.store.pg_writer import PgWriter
from corral.store.writer import SqliteWriter
from corral.tracing.stored import StoredSpan
from corral.tracing.tracers import sdk_provider

if TYPE_CHECKING:
    from corral.store.trace_tables import TraceSpan

__all__ = ["FLUSH_SECONDS", "TraceStore"]

log = logging.getLogger("corral.tracing")

FLUSH_SECONDS = 1.0
"""How often queued spans are written."""

PRUNE_SECONDS = 300.0
"""How often spans past ``trace_keep_days`` are deleted."""

QUEUE_MAX = 20_000
"""Ended spans waiting for the next write at most; beyond it the oldest are dropped, so a
store that cannot keep up never grows the process's memory."""

_DAY_NS = 86_400 * 10**9


class TraceStore:
    """Keeps the spans of one platform's tracer provider in its store; see the module
    docstring. Inert (nothing queued, no task) when the platform does not trace."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        settings: Callable[[], Awaitable[tuple[Redactor, float]]],
        writer: SqliteWriter | PgWriter | None = None,
    ) -> None:
        self._sessions = sessions
        self._writer = writer
        """A SQLite file's writer takes the inserts to its thread; elsewhere SQLAlchemy."""
        self._settings = settings
        """The redactor and ``trace_keep_days`` now."""
        self._queue: deque[Any] = deque(maxlen=QUEUE_MAX)
        self._processor: Any = None
        self._task: asyncio.Task[None] | None = None
        self._pruned_at = 0.0

    @property
    def on(self) -> bool:
        """Whether spans are being kept."""
        return self._processor is not None

    def attach(self) -> bool:
        """Keep the spans of the provider the platform traces with; whether there is one
        (an SDK provider: ``corral[otel]`` configured, or one given to ``use_provider``)."""
        provider = sdk_provider()
        if provider is None:
            return False
        from corral.tracing.local_processor import LocalSpans  # the SDK is there

        self._processor = LocalSpans(self._queue.append)
        provider.add_span_processor(self._processor)
        return True

    def start(self) -> None:
        """Start the background writes (in the platform's event loop)."""
        if self.on and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        """Stop keeping spans and write what is queued."""
        if self._processor is not None:
            self._processor.shutdown()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.on:
            await self.flush()

    async def flush(self) -> int:
        """Write the queued spans now; how many."""
        spans = []
        while self._queue:
            spans.append(self._queue.popleft())
        if not spans:
            return 0
        redact, _ = await self._settings()
        if isinstance(self._writer, SqliteWriter):
            # Rows built and inserted in the writer's thread: the event loop only hands over.
            await self._writer.submit(partial(_insert, spans, redact))
            return len(spans)
        rows = [_row(span, redact) for span in spans]
        from corral.store.trace_tables import TraceSpan  # the table loads with its first use

        async with self._sessions.begin() as session:
            await session.execute(insert(TraceSpan), rows)
        return len(rows)

    async def prune(self, now_ns: int | None = None) -> int:
        """Delete the spans that started more than ``trace_keep_days`` ago; how many."""
        _, days = await self._settings()
        cutoff = (now_ns if now_ns is not None else time.time_ns()) - int(days * _DAY_NS)
        from corral.store.trace_tables import TraceSpan  # the table loads with its first use

        async with self._sessions.begin() as session:
            result = await session.execute(delete(TraceSpan).where(TraceSpan.start_ns < cutoff))
        return int(getattr(result, "rowcount", 0) or 0)

    async def spans(self, trace_id: str) -> list[StoredSpan]:
        """The stored spans of one trace, by start time."""
        from corral.store.trace_tables import TraceSpan  # the table loads with its first use

        async with self._sessions() as session:
            rows = await session.scalars(
                select(TraceSpan)
                .where(TraceSpan.trace_id == trace_id)
                .order_by(TraceSpan.start_ns, TraceSpan.span_id)
            )
            return [_stored(row) for row in rows]

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            try:
                await self.flush()
                if time.monotonic() - self._pruned_at >= PRUNE_SECONDS:
                    self._pruned_at = time.monotonic()
                    await self.prune()
            except Exception:  # a failed write loses those spans, never the loop
                log.exception("writing spans to the local trace store failed")


_INSERT = (
    "INSERT INTO trace_spans (trace_id, span_id, parent_id, name, kind, start_ns, end_ns, "
    "status, attributes, events) VALUES (:trace_id, :span_id, :parent_id, :name, :kind, "
    ":start_ns, :end_ns, :status, :attributes, :events)"
)


def _insert(spans: list[Any], redact: Redactor, db: sqlite3.Connection) -> None:
    """The writer's work: the spans' rows in one statement (JSON as SQLAlchemy stores it)."""
    rows = []
    for span in spans:
        row = _row(span, redact)
        row["attributes"] = json.dumps(row["attributes"], ensure_ascii=False)
        row["events"] = json.dumps(row["events"], ensure_ascii=False)
        rows.append(row)
    db.executemany(_INSERT, rows)


def _row(span: Any, redact: Redactor) -> dict[str, Any]:
    """The ``trace_spans`` row of an SDK ``ReadableSpan``."""
    context, parent = span.context, span.parent
    return {
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_id": format(parent.span_id, "016x") if parent is not None else None,
        "name": str(span.name)[:300],
        "kind": span.kind.name.lower(),
        "start_ns": int(span.start_time or 0),
        "end_ns": int(span.end_time or span.start_time or 0),
        "status": span.status.status_code.name.lower(),
        "attributes": _attributes(span.attributes, redact),
        "events": [
            {
                "name": event.name,
                "at_ns": int(event.timestamp),
                "attributes": _attributes(event.attributes, redact),
            }
            for event in span.events
        ],
    }


def _attributes(attributes: Any, redact: Redactor) -> dict[str, Any]:
    return {str(key): _value(value, redact) for key, value in (attributes or {}).items()}


def _value(value: Any, redact: Redactor) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Sequence | Iterable) and not isinstance(value, bytes):
        return [_value(item, redact) for item in value]
    return value


def _stored(row: TraceSpan) -> StoredSpan:
    return StoredSpan(
        trace_id=row.trace_id,
        span_id=row.span_id,
        parent_id=row.parent_id,
        name=row.name,
        kind=row.kind,
        start_ns=row.start_ns,
        end_ns=row.end_ns,
        status=row.status,
        attributes=dict(row.attributes or {}),
        events=list(row.events or []),
    )
