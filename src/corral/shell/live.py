"""Live output frames: paced by a flush interval, capped per frame and per stream.

Output that arrives inside the interval is buffered; when more than a frame's worth piles
up, the oldest part is skipped and the frame says so. After a stream's cap the frames stop
with one marker. Live frames are a display channel only; the captured result is separate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from corral.shell.capture import TailBuffer

__all__ = ["LivePacer", "LiveSink"]

LiveSink = Callable[[str, str], None]
log = logging.getLogger("corral.shell")


@dataclass(slots=True)
class _Stream:
    pending: TailBuffer
    sent: int = 0
    last: float = float("-inf")
    timer: asyncio.TimerHandle | None = None
    capped: bool = False
    frames: int = 0
    skipped: int = 0


class LivePacer:
    """Turns output chunks into paced, capped frames for a live sink."""

    def __init__(
        self,
        sink: LiveSink,
        *,
        flush_ms: int,
        frame_max: int,
        stream_cap: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink
        self._interval = max(0.0, flush_ms / 1000)
        self._frame_max = max(64, frame_max)
        self._cap = max(0, stream_cap)
        self._clock = clock
        self._streams: dict[str, _Stream] = {}
        self._broken = False

    def feed(self, stream: str, text: str) -> None:
        state = self._streams.get(stream)
        if state is None:
            state = _Stream(pending=TailBuffer(self._frame_max))
            self._streams[stream] = state
        if state.capped or self._broken:
            return
        state.pending.append(text)
        wait = state.last + self._interval - self._clock()
        if wait <= 0:
            self._flush(stream, state)
        elif state.timer is None:
            state.timer = asyncio.get_running_loop().call_later(wait, self._flush, stream, state)

    def close(self) -> None:
        """Send what is still pending and stop every timer."""
        for stream, state in self._streams.items():
            self._flush(stream, state)

    def stats(self) -> dict[str, dict[str, int]]:
        return {
            name: {"frames": s.frames, "sent": s.sent, "skipped": s.skipped, "capped": s.capped}
            for name, s in self._streams.items()
        }

    def _flush(self, stream: str, state: _Stream) -> None:
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if not len(state.pending) or state.capped or self._broken:
            return
        pending = state.pending
        text = pending.text(whole_lines=False)
        if pending.dropped:
            marker = f"[… {pending.dropped:,} characters skipped to keep up …]\n"
            text = marker + text[len(marker) :] if len(text) > len(marker) else marker
            state.skipped += pending.dropped
        state.pending = TailBuffer(self._frame_max)
        room = self._cap - state.sent
        if len(text) >= room:
            text = text[: max(0, room)] + (
                f"\n[live output stopped: live_shell_stream_cap of {self._cap:,} characters "
                "reached; the result keeps the newest output]\n"
            )
            state.capped = True
        state.sent += len(text)
        state.last = self._clock()
        state.frames += 1
        try:
            self._sink(stream, text)
        except Exception:
            log.exception("live output sink failed; no more frames for this command")
            self._broken = True
