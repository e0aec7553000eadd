"""The sync handlers' threads keep ``asyncio.to_thread``'s semantics: results and
exceptions come back, the caller's contextvars are seen (and a handler's changes stay in
its copy), a call cancelled while queued never runs, one cancelled while running is
dropped, and calls beyond the idle threads start new ones up to the limit."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from corral.errors import ToolError
from corral.tools.handler_threads import HandlerThreads, run_in_thread

WHO = contextvars.ContextVar("WHO", default="nobody")


def _ident() -> int:
    return threading.get_ident()


async def test_the_result_comes_back_from_another_thread() -> None:
    assert await run_in_thread(_ident) != threading.get_ident()
    assert await run_in_thread(divmod, 7, 2) == (3, 1)


async def test_the_handlers_exception_is_raised_in_the_caller() -> None:
    def fails() -> None:
        raise ToolError("no such file 'x'", code="not_found")

    with pytest.raises(ToolError, match="no such file") as raised:
        await run_in_thread(fails)
    assert raised.value.code == "not_found"


async def test_the_caller_context_is_seen_and_changes_stay_in_the_thread() -> None:
    def reads_then_sets() -> str:
        seen = WHO.get()
        WHO.set("handler")
        return seen

    WHO.set("caller")
    assert await run_in_thread(reads_then_sets) == "caller"
    assert WHO.get() == "caller"


async def test_a_call_cancelled_while_queued_never_runs() -> None:
    threads = HandlerThreads(max_threads=1)
    gate, entered = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocks() -> str:
        entered.set()
        gate.wait(30)
        return "first"

    first = asyncio.ensure_future(threads.run(blocks))
    assert await asyncio.to_thread(entered.wait, 30)
    queued = asyncio.ensure_future(threads.run(ran.append, "queued"))
    await asyncio.sleep(0)  # let it reach the queue
    queued.cancel()
    gate.set()
    assert await first == "first"
    # The one thread takes jobs in order: once this one ran, the cancelled one was passed.
    await threads.run(ran.append, "after")
    assert ran == ["after"]
    assert queued.cancelled()


async def test_a_call_cancelled_while_running_is_dropped_and_the_thread_serves_on() -> None:
    threads = HandlerThreads(max_threads=1)
    gate, entered = threading.Event(), threading.Event()

    def blocks() -> str:
        entered.set()
        gate.wait(30)
        return "late"

    running = asyncio.ensure_future(threads.run(blocks))
    assert await asyncio.to_thread(entered.wait, 30)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    gate.set()
    assert await threads.run(divmod, 9, 4) == (2, 1)


async def test_calls_beyond_the_idle_threads_get_threads_of_their_own() -> None:
    # Each call waits for the other: with one thread only they would never both finish.
    threads = HandlerThreads(max_threads=2)
    a_in, b_in = threading.Event(), threading.Event()

    def meet(mine: threading.Event, other: threading.Event) -> bool:
        mine.set()
        return other.wait(30)

    both = await asyncio.gather(threads.run(meet, a_in, b_in), threads.run(meet, b_in, a_in))
    assert both == [True, True]
