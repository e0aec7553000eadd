"""Showing a turn as it happens: streamed model text, tool cards, waits and the ending."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.events import Event
    from corral.runtime.results import RunResult
    from corral.runtime.runtime import Runtime

__all__ = ["TurnPrinter", "exit_code", "follow", "print_result", "runtime"]

T = TypeVar("T")


def runtime(platform: Platform) -> Runtime:
    """The platform's agent runtime."""
    return platform.runtime


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result_text(result: dict[str, Any]) -> str:
    parts = []
    for block in result.get("content", []):
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        else:
            parts.append(f"[{block.get('type')} {block.get('media_type', '')}]")
    return " ".join(parts)


class TurnPrinter:
    """Prints the events of a conversation as a readable transcript."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._streaming = False

    def _end_stream(self) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False

    def __call__(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "delta":
            self.console.print(Text(event["text"]), end="")
            self._streaming = True
            return
        if kind == "output":
            self._end_stream()
            self.console.print(Text(f"  │ {event['stream']}: {_short(event['text'])}", style="dim"))
            return
        if kind == "row":
            self._row(event["row"])

    def _row(self, row: dict[str, Any]) -> None:
        data, kind = row["data"], row["kind"]
        if kind == "model_turn":
            if not self._streaming and data.get("text"):
                self.console.print(Text(data["text"]))
            self._end_stream()
        elif kind == "tool_call":
            self._end_stream()
            self.console.print(
                Text.assemble(
                    ("  ╭ ", "cyan"), (data["tool"], "bold cyan"), " ", _short(data["args"])
                )
            )
        elif kind == "tool_result":
            result = data["result"]
            mark, style = ("✗", "red") if result.get("is_error") else ("✓", "green")
            status = result.get("status", "ok")
            label = f"{data['tool']}" + ("" if status == "ok" else f" ({status})")
            self.console.print(
                Text.assemble(
                    ("  ╰ ", style), (f"{mark} {label}: ", style), _short(_result_text(result))
                )
            )
        elif kind in ("background_report", "message"):
            self._end_stream()
            title = data.get("title") or (data.get("sender") or {}).get("agent") or kind
            self.console.print(Text(f"» {kind.replace('_', ' ')}: {title}", style="magenta"))
        elif kind == "card":
            self._card(data)

    def _card(self, data: dict[str, Any]) -> None:
        self._end_stream()
        card = data.get("card")
        if card == "waiting":
            wait = data["wait"]
            self.console.print(
                Text(
                    f"  ⏸ {wait['kind']} {wait['id']} for {wait['tool']}: "
                    f"{data.get('reason') or data.get('text', '')}",
                    style="yellow",
                )
            )
        elif card == "decided":
            self.console.print(Text(f"  ✔ {data['decision']} by {data['by']}", style="yellow"))
        elif card == "answered":
            self.console.print(Text(f"  ✔ answered by {data['by']}", style="yellow"))
        elif card == "compaction":
            self.console.print(
                Text(
                    f"  ✂ {data['action']} {data['id']}: about {data['tokens_saved']:,} tokens "
                    "saved",
                    style="dim",
                )
            )


def print_result(console: Console, result: RunResult) -> None:
    style = {"finished": "green", "parked": "yellow"}.get(result.status, "red")
    line = f"conversation {result.conversation_id} · run {result.run_id} · {result.status}"
    if result.reason:
        line += f" ({result.reason})"
    line += f" · {result.steps} steps"
    console.print(Text(line, style=style))
    if result.detail:
        console.print(Text(f"  {result.detail}", style="dim"))
    for approval in result.approvals:
        console.print(
            Text(f"  answer with: corral approvals decide {approval} approve|deny", style="yellow")
        )
    for question in result.questions:
        console.print(Text(f"  answer with: corral questions answer {question} …", style="yellow"))


def exit_code(result: RunResult) -> int:
    """0 finished, 3 waiting for a person, 1 anything else."""
    return {"finished": 0, "parked": 3}.get(result.status, 1)


async def follow(
    platform: Platform,
    conversation_id: str,
    on_event: Callable[[Event], None] | None,
    action: Callable[[], Awaitable[T]],
) -> T:
    """Run ``action`` showing the conversation's events, until it is idle in this process.

    Waiting for idle keeps the command attached while the conversation continues by itself
    (a report that arrived during the turn), so closing never cuts such a turn short.
    """
    import asyncio

    rt = runtime(platform)

    async def until_idle() -> T:
        value = await action()
        await rt.wait_idle(conversation_id)
        return value

    if on_event is None:
        return await until_idle()
    async with rt.events.subscribe(conversation_id) as events:
        finished = asyncio.ensure_future(until_idle())
        try:
            while True:
                getter = asyncio.ensure_future(events.get())
                done, _ = await asyncio.wait(
                    {finished, getter}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    on_event(getter.result())
                    continue
                if not getter.cancel():  # it got an event just as the work ended
                    on_event(getter.result())
                while (event := events.get_nowait()) is not None:
                    on_event(event)
                return finished.result()
        finally:
            finished.cancel()
