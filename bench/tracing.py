"""What tracing costs a tool call (issue 37).

    .venv/bin/python bench/tracing.py [--calls N] [--rounds N]

Two platforms in one process over the same ``noop`` tool (async, from bench/noop_package):
one built with no tracer provider (tracing off: the untraced chain, one ``is None`` test per
call) and one whose provider records every span and hands it to an exporter that drops it
(``SimpleSpanProcessor``, so the export call is on the measured path: the worst case). The
handler called directly is the baseline. Traced calls are measured with the default
``trace_stages = notable`` (the target) and with ``all`` (a span per stage, informative);
the cost of one bare SDK span in the same run puts both in the machine's scale (the SDK's
own floor: a traced call cannot cost less than its ``execute_tool`` span). Rounds alternate
between the platforms so that drift on a shared machine hits both sides; each side takes
its best round. Times are CPU time of the event loop's thread (``time.thread_time``), not
wall time: on a loaded machine wall time counts other processes' turns, and what runs on the
call's path runs in that thread (an exporter's or the store writer's thread is left out,
and measured on its own where it matters).

Off against today's code (target: within 1 µs): :func:`dispatch_before` is the untraced
``Dispatcher.dispatch`` as it was before tracing (the two differ only by the ``is None``
test), run on the same dispatcher in interleaved rounds.

Every traced platform also keeps its spans in the local trace store (its processor only
queues them; a background task writes them every second); a third figure measures the store
alone (``OTEL_TRACES_EXPORTER=corral``): on the call's path, and its batched write (in the
SQLite writer's thread, off the event loop) per call.

Targets: tracing off within 1 µs of before; traced dispatch (default stage spans) adds
under 15 µs per call over untraced dispatch.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import corral
from corral.errors import ToolError
from corral.platform import Platform
from corral.tools.call import CallRequest, ToolCall
from corral.tools.context import Cancellation
from corral.tools.dispatch import Dispatcher
from corral.tools.results import ToolResult
from corral.tracing import use_provider
from noop_package import write_package
from outcome import EXIT_SKIPPED, Figure, finish

TRACED_TARGET_US = 15.0
OFF_TARGET_US = 1.0


async def dispatch_before(self: Dispatcher, request: CallRequest, *, approved: bool = False) -> Any:
    """``Dispatcher.dispatch`` before issue 37, verbatim but for the names it imports."""
    state = await self._state.dispatch_state()
    if self._switched and (state is not self._state_seen or time.monotonic() >= self._recheck_at):
        self._recheck(state)
    call = ToolCall(
        request,
        state,
        approved=approved,
        cancellation=request.cancellation or Cancellation(),
        started=time.perf_counter(),
    )
    try:
        return await self._chain(call)
    except ToolError as error:
        return await self._shaping.shape(call, ToolResult.from_error(error))


async def best_of(calls: int, call: Callable[[], Awaitable[Any]]) -> float:
    """Microseconds of the event loop thread's CPU time per call."""
    started = time.thread_time()
    for _ in range(calls):
        await call()
    return (time.thread_time() - started) / calls * 1e6


def dropping_provider(*, batch: bool = False) -> Any:
    """A provider whose exporter drops every span: on the call's path with
    ``SimpleSpanProcessor``; queued for a thread with ``BatchSpanProcessor`` (what
    ``corral[otel]`` configures)."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    processor = BatchSpanProcessor if batch else SimpleSpanProcessor
    provider.add_span_processor(processor(Dropping()))
    return provider


async def piped(platform: Platform) -> Callable[[], Awaitable[Any]]:
    request = CallRequest(tool="noop", arguments={"text": "hi"}, caller=await platform.caller())
    dispatch = platform.dispatcher.dispatch

    async def one() -> Any:
        return await dispatch(request)

    for _ in range(200):  # warm caches and validators
        await one()
    return one


async def measure(calls: int, rounds: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        package = write_package(Path(tmp))
        use_provider(None)
        async with corral.open(Path(tmp) / "off", package_paths=[package]) as off_platform:
            assert off_platform.dispatcher.tracer is None
            use_provider(dropping_provider())
            try:
                async with corral.open(Path(tmp) / "on", package_paths=[package]) as on_platform:
                    assert on_platform.dispatcher.tracer is not None
                    tool = off_platform.registry.tools["noop"]
                    args: dict[str, Any] = {"text": "hi"}

                    async def direct() -> Any:
                        return await tool.handler(args, None)

                    off, on = await piped(off_platform), await piped(on_platform)
                    request = CallRequest(
                        tool="noop", arguments=args, caller=await off_platform.caller()
                    )
                    dispatcher = off_platform.dispatcher

                    async def before() -> Any:
                        return await dispatch_before(dispatcher, request)

                    now, then = [], []
                    for _ in range(6 * rounds):  # interleaved: drift hits both sides
                        then.append(await best_of(calls // 3 or 1, before))
                        now.append(await best_of(calls // 3 or 1, off))
                    tracer = on_platform.dispatcher.tracer

                    async def bare_span() -> None:
                        tracer.start_span("bench").end()

                    base, untraced, traced, every, one_span = [], [], [], [], []
                    for _ in range(3 * rounds):
                        base.append(await best_of(calls, direct))
                        untraced.append(await best_of(calls, off))
                        traced.append(await best_of(calls, on))
                        one_span.append(await best_of(calls, bare_span))
                    use_provider(dropping_provider(batch=True))
                    async with corral.open(
                        Path(tmp) / "batch", package_paths=[package]
                    ) as batch_platform:
                        queued = await piped(batch_platform)
                        batched = []
                        for _ in range(3 * rounds):
                            untraced.append(await best_of(calls, off))
                            batched.append(await best_of(calls, queued))
                    # The local trace store alone (OTEL_TRACES_EXPORTER=corral): a provider
                    # with no exporter, the store's processor added by the kernel; each round
                    # is followed by the store's write, timed on its own.
                    from opentelemetry.sdk.trace import TracerProvider

                    use_provider(TracerProvider())
                    async with corral.open(
                        Path(tmp) / "local", package_paths=[package]
                    ) as local_platform:
                        assert local_platform.kernel.traces.on
                        stored = await piped(local_platform)
                        traces = local_platform.kernel.traces
                        await traces.flush()

                        kept, kept_off, writes = [], [], []
                        for _ in range(3 * rounds):
                            kept_off.append(await best_of(calls, off))
                            kept.append(await best_of(calls, stored))
                            # Process time: the rows are built in the writer's thread.
                            started = time.process_time()
                            await traces.flush()
                            writes.append((time.process_time() - started) / calls * 1e6)
                    await on_platform.admin.set_live("trace_stages", "all")
                    await on()  # the setting reaches the dispatch state
                    for _ in range(3 * rounds):
                        every.append(await best_of(calls // 3 or 1, on))
                    stages = len(on_platform.dispatcher.chained)
            finally:
                use_provider(None)
    bare, plain, spanned, all_spans = min(base), min(untraced), min(traced), min(every)
    added = spanned - plain
    added_batched = min(batched) - min(untraced)
    off_added = min(now) - min(then)
    added_local = min(kept) - min(kept_off)
    return [
        Figure(
            name="tracing off, dispatch now minus before tracing",
            value=off_added,
            unit="µs",
            baseline=min(then),
            target=f"< {OFF_TARGET_US:.0f} µs",
            met=off_added < OFF_TARGET_US,
        ),
        Figure(name="dispatch overhead, tracing off", value=plain - bare, unit="µs", baseline=bare),
        Figure(name="one bare SDK span, started and ended", value=min(one_span), unit="µs"),
        Figure(
            name="tracing on (no-op exporter, trace_stages=notable) minus off",
            value=added,
            unit="µs",
            baseline=plain,
            target=f"< {TRACED_TARGET_US:.0f} µs",
            met=added < TRACED_TARGET_US,
        ),
        Figure(
            name="tracing on (no-op exporter) minus off, in bare SDK spans",
            value=added / min(one_span),
            unit="spans",
        ),
        Figure(
            name="tracing on (BatchSpanProcessor, as corral[otel] sets up) minus off",
            value=added_batched,
            unit="µs",
            baseline=plain,
        ),
        Figure(
            name="tracing on, local trace store only, on the call's path, minus off",
            value=added_local,
            unit="µs",
            baseline=plain,
        ),
        Figure(
            name="local trace store: its batched write, per call (writer thread)",
            value=min(writes),
            unit="µs",
        ),
        Figure(
            name=f"tracing on (trace_stages=all, {stages + 1} spans a call) minus off",
            value=all_spans - plain,
            unit="µs",
            baseline=plain,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        print("the OpenTelemetry SDK is not installed: pip install 'corral[otel]'")
        raise SystemExit(EXIT_SKIPPED) from None
    finish("tracing", asyncio.run(measure(options.calls, options.rounds)))


if __name__ == "__main__":
    main()
