"""The platform's side of the host plane: ask the broker, stream its output, stop waiting.

The secrets staged for a command (a skill's declared credentials, the run's ticket) travel
in their own field, declared by name; output is redacted here too, so a value never reaches
a sink even from a broker that echoed it.

Stop cannot cancel a host command: the broker runs it to its end or its own timeout. The
client closes the connection and the outcome says it only stopped waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from corral.secrets import Redactor
from corral.shell.capture import TailBuffer
from corral.shell.host.protocol import MAX_LINE, VERSION, ProtocolError, encode, read_message

__all__ = ["BrokerRefused", "BrokerUnavailable", "HostBrokerClient", "HostOutcome"]


class BrokerUnavailable(Exception):
    """No broker answers on the configured socket."""


class BrokerRefused(Exception):
    """The broker refused the command (its allowlist, roots or analysis)."""

    def __init__(self, rule: str, word: str | None, detail: str) -> None:
        super().__init__(detail)
        self.rule, self.word, self.detail = rule, word, detail


@dataclass(slots=True, kw_only=True)
class HostOutcome:
    status: Literal["exited", "timed_out", "stopped"]
    exit_code: int | None
    duration: float
    confinement: str
    roots: list[str]
    timeout: int | None
    capture: TailBuffer
    chars: dict[str, int] = field(default_factory=dict)
    broker_trimmed: int = 0
    staged: list[str] | None = None
    """The secret names the broker says it added; None from a broker that predates them."""


class HostBrokerClient:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.open_unix_connection(str(self.socket_path), limit=MAX_LINE)
        except OSError as exc:
            raise BrokerUnavailable(
                f"no host broker answers on {str(self.socket_path)!r} ({exc.strerror or exc}); "
                "the operator starts it with `corral host-broker --socket PATH --allow CMD`"
            ) from None

    async def ping(self) -> dict[str, Any]:
        reader, writer = await self._connect()
        try:
            writer.write(encode({"v": VERSION, "op": "ping"}))
            await writer.drain()
            message = await read_message(reader)
        finally:
            writer.close()
        if message is None or message.get("type") != "pong":
            raise BrokerUnavailable(f"the host broker answered {message!r} to a ping")
        return message

    async def run(
        self,
        command: str,
        *,
        cwd: str,
        limit: int,
        env: Mapping[str, str],
        capture_limit: int,
        variables: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        sinks: Sequence[Callable[[str, str], None]] = (),
        stop: asyncio.Event,
    ) -> HostOutcome:
        """Run on the host within ``limit`` seconds (the broker may clamp it); when ``stop``
        is set, stop waiting and return what arrived. ``secrets`` reach the command under
        their names (declared in the request) and are redacted from what arrives."""
        started = time.monotonic()
        reader, writer = await self._connect()
        capture = TailBuffer(capture_limit)
        chars: dict[str, int] = {}
        info: dict[str, Any] = {}
        try:
            request = {
                "v": VERSION,
                "op": "run",
                "command": command,
                "cwd": cwd,
                "timeout": limit,
                "env": dict(env),
                "variables": dict(variables or {}),
                "declared": sorted(secrets or {}),
                "secrets": dict(secrets or {}),
            }
            redact = Redactor((secrets or {}).values())
            writer.write(encode(request))
            await writer.drain()
            stopper = asyncio.ensure_future(stop.wait())
            try:
                while True:
                    reading = asyncio.ensure_future(read_message(reader))
                    done, _ = await asyncio.wait(
                        {reading, stopper}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if reading not in done:
                        reading.cancel()
                        return HostOutcome(
                            status="stopped",
                            exit_code=None,
                            duration=time.monotonic() - started,
                            confinement=str(info.get("confinement", "host-broker")),
                            roots=list(info.get("roots", [])),
                            timeout=info.get("timeout"),
                            capture=capture,
                            chars=chars,
                        )
                    message = reading.result()
                    if message is None:
                        raise BrokerUnavailable("the host broker closed the connection early")
                    kind = message.get("type")
                    if kind == "refused":
                        raise BrokerRefused(
                            str(message.get("rule")),
                            message.get("word"),
                            str(message.get("detail")),
                        )
                    if kind == "started":
                        info = message
                    elif kind == "output":
                        stream = str(message.get("stream"))
                        text = redact(str(message.get("text")))
                        chars[stream] = chars.get(stream, 0) + len(text)
                        capture.append(text)
                        for sink in sinks:
                            sink(stream, text)
                    elif kind == "exit":
                        status = message.get("status")
                        return HostOutcome(
                            status="timed_out" if status == "timed_out" else "exited",
                            exit_code=message.get("exit_code"),
                            duration=time.monotonic() - started,
                            confinement=str(info.get("confinement", "host-broker")),
                            roots=list(info.get("roots", [])),
                            timeout=info.get("timeout"),
                            capture=capture,
                            chars=chars,
                            broker_trimmed=int(message.get("trimmed") or 0),
                            staged=_names(info.get("staged")),
                        )
            finally:
                stopper.cancel()
        except ProtocolError as exc:
            raise BrokerUnavailable(f"the host broker sent garbage: {exc}") from None
        finally:
            with contextlib.suppress(ConnectionError, RuntimeError):
                writer.close()


def _names(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [str(name) for name in value]
