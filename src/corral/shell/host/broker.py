"""The host broker: runs allowlisted commands on the host for the platform.

Started by the operator (``corral host-broker --socket PATH --allow make --allow git
--root /srv/app``), it owns its own limits, which no platform role can widen:

- every command the analysis finds (wrappers included) must be on ``--allow`` or be a
  harmless shell builtin, and the analysis itself must pass;
- the cwd must lie inside a ``--root``;
- the timeout is clamped to ``--max-timeout``;
- the environment is rebuilt from the same allowlist as in the application; the secrets
  the platform staged (a skill's declared credentials, the run's ticket) are added after
  that, only under names the request declares, and redacted from the output;
- with ``--sandbox`` commands run under bubblewrap seeing only the roots (read-write)
  and the system toolchain, without network unless ``--network``;
- with ``--peer-uid`` only that user id may connect (checked with ``SO_PEERCRED``), and
  the socket file is created mode 0600.

A command runs to its own end even when the client stops waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import socket
import struct
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.secrets import Redactor
from corral.shell.analysis import analyze
from corral.shell.environment import (
    SYSTEM_PATH,
    Environment,
    build_environment,
    call_env_problem,
    staged_problem,
)
from corral.shell.host.protocol import MAX_LINE, VERSION, ProtocolError, encode, read_message
from corral.shell.runner import Execution, ProcessSpec, Spawner, spawn_process
from corral.shell.sandbox import (
    SANDBOX_HOME,
    BoundSource,
    SandboxFiles,
    bwrap_argv,
    plan_mounts,
)

__all__ = ["BUILTINS", "BrokerConfig", "HostBroker"]

log = logging.getLogger("corral.host_broker")

BUILTINS = frozenset(
    {":", "true", "false", "echo", "printf", "test", "[", "[[", "cd", "pwd", "export",
     "unset", "set", "shift", "read", "local", "return", "exit", "wait"}
)  # fmt: skip
"""Shell builtins that run nothing else; always allowed."""

_BASH = ("/bin/bash", "--noprofile", "--norc", "-c")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    socket: Path
    allow: frozenset[str]
    roots: tuple[str, ...]
    max_timeout: int = 300
    max_pending: int = 1_000_000
    """Characters of output held for a slow client before the oldest are dropped."""
    peer_uid: int | None = None
    sandbox: bool = False
    network: bool = False
    bwrap: str = "bwrap"

    @property
    def confinement(self) -> str:
        return "host-broker:" + ("bubblewrap" if self.sandbox else "unconfined")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Command:
    """A request that passed every rule, ready to run."""

    command: str
    cwd: str
    timeout: int
    env: dict[str, str]
    variables: dict[str, str]
    secrets: dict[str, str]


class _Refusal(Exception):
    def __init__(self, rule: str, word: str | None, detail: str) -> None:
        super().__init__(detail)
        self.message = {"type": "refused", "rule": rule, "word": word, "detail": detail}


def _strings(request: dict[str, Any], key: str) -> dict[str, str]:
    value = request.get(key) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _Refusal("bad_request", None, f"{key} must be an object of string values")
    return value


def _declared(request: dict[str, Any]) -> frozenset[str]:
    value = request.get("declared") or []
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise _Refusal("bad_request", None, "declared must be a list of variable names")
    return frozenset(value)


class _Sender:
    """Streams output rows to one client, bounded however slow the client is."""

    def __init__(self, writer: asyncio.StreamWriter, cap: int) -> None:
        self._writer = writer
        self._cap = cap
        self._pending: deque[tuple[str, str]] = deque()
        self._size = 0
        self.trimmed = 0
        self.gone = False
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run())

    def feed(self, stream: str, text: str) -> None:
        if self.gone:
            return
        self._pending.append((stream, text))
        self._size += len(text)
        while self._size > self._cap and self._pending:
            _, dropped = self._pending.popleft()
            self._size -= len(dropped)
            self.trimmed += len(dropped)
        self._wake.set()

    async def finish(self, message: dict[str, Any]) -> None:
        self._pending.append(("", ""))
        self._wake.set()
        await self._task
        await self._send(encode(message))

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                stream, text = self._pending.popleft()
                self._size -= len(text)
                if not stream:
                    return
                await self._send(encode({"type": "output", "stream": stream, "text": text}))

    async def _send(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, RuntimeError):
            self.gone = True


class HostBroker:
    def __init__(self, config: BrokerConfig, *, spawner: Spawner = spawn_process) -> None:
        self.config = config
        self._spawner = spawner
        self._roots = tuple(os.path.realpath(r) for r in config.roots)
        self._files: SandboxFiles | None = None
        if config.sandbox:
            self._files = SandboxFiles.write(Path(tempfile.mkdtemp(prefix="corral-broker-")))
        self._running: set[Execution] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def serve(self) -> asyncio.Server:
        path = self.config.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(self._handle, path=str(path), limit=MAX_LINE)
        finally:
            os.umask(old)
        return server

    def info(self) -> dict[str, Any]:
        return {
            "type": "pong",
            "v": VERSION,
            "allow": sorted(self.config.allow),
            "roots": list(self._roots),
            "max_timeout": self.config.max_timeout,
            "confinement": self.config.confinement,
        }

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not self._peer_allowed(writer):
                writer.write(
                    encode({"type": "refused", "rule": "peer", "word": None, "detail": "peer uid"})
                )
                return
            request = await read_message(reader)
            if request is None:
                return
            if request.get("op") == "ping":
                writer.write(encode(self.info()))
            elif request.get("op") == "run":
                await self._run(request, writer)
            else:
                writer.write(
                    encode({"type": "refused", "rule": "bad_request", "word": None,
                            "detail": f"unknown op {request.get('op')!r}"})
                )  # fmt: skip
        except _Refusal as refusal:
            writer.write(encode(refusal.message))
        except ProtocolError as exc:
            writer.write(encode({"type": "refused", "rule": "bad_request", "word": None,
                                 "detail": str(exc)}))  # fmt: skip
        except Exception:
            log.exception("host broker request failed")
        finally:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await writer.drain()
                writer.close()

    def _peer_allowed(self, writer: asyncio.StreamWriter) -> bool:
        if self.config.peer_uid is None:
            return True
        sock = writer.get_extra_info("socket")
        if sock is None:
            return False
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", raw)
        return bool(uid == self.config.peer_uid)

    def _judge(self, request: dict[str, Any]) -> _Command:
        command, cwd = request.get("command"), request.get("cwd")
        timeout = request.get("timeout", self.config.max_timeout)
        if not isinstance(command, str) or not isinstance(cwd, str):
            raise _Refusal("bad_request", None, "command and cwd must be strings")
        if not isinstance(timeout, int):
            raise _Refusal("bad_request", None, "timeout must be an integer")
        env = _strings(request, "env")
        problem = call_env_problem(env)
        if problem is not None:
            raise _Refusal("env", problem[0], f"env sets {problem[0]!r}, which {problem[1]}")
        variables, secrets = _strings(request, "variables"), _strings(request, "secrets")
        declared = _declared(request)
        for name, value in (*variables.items(), *secrets.items()):
            why = staged_problem(name, value)
            if why is not None:
                raise _Refusal("staged", name, f"the staged variable {name!r} {why}")
        undeclared = sorted(set(secrets) - declared)
        if undeclared:
            raise _Refusal(
                "staged",
                undeclared[0],
                f"secret {undeclared[0]!r} is not among the request's declared names "
                f"{sorted(declared)}; declare every staged secret's name",
            )
        real = os.path.realpath(cwd)
        if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in self._roots):
            raise _Refusal(
                "root", cwd, f"cwd {cwd!r} is outside the broker's roots {list(self._roots)}"
            )
        analysis = analyze(command, cwd=real)
        if not analysis.allowed:
            raise _Refusal(str(analysis.rule), analysis.word, analysis.detail)
        for found in analysis.commands:
            for name in (*found.wrappers, found.name):
                if name not in self.config.allow and name not in BUILTINS:
                    raise _Refusal(
                        "allowlist",
                        name,
                        f"{name!r} is not on the host broker's command allowlist "
                        f"({', '.join(sorted(self.config.allow)) or 'empty'})",
                    )
        effective = max(1, min(timeout, self.config.max_timeout))
        return _Command(
            command=command,
            cwd=real,
            timeout=effective,
            env=env,
            variables=variables,
            secrets=secrets,
        )

    def _spec(self, run: _Command) -> tuple[ProcessSpec, Environment]:
        sandboxed = self._files is not None
        cwd = run.cwd
        environment = build_environment(
            platform_env=os.environ,
            home=SANDBOX_HOME if sandboxed else os.environ.get("HOME", cwd),
            user=getpass.getuser(),
            path=SYSTEM_PATH if sandboxed else os.environ.get("PATH", SYSTEM_PATH),
            call_env=run.env,
            variables=run.variables,
            declared=run.secrets,
        )
        argv: Sequence[str] = (*_BASH, run.command)
        if self._files is not None:
            mounts = plan_mounts(
                self._files,
                [BoundSource(name=r, root=r, writable=True) for r in self._roots],
                data_dir="/nonexistent",
                protected=(),
                network=self.config.network,
            )
            argv = bwrap_argv(
                self.config.bwrap, mounts, network=self.config.network, cwd=cwd, argv=argv
            )
        spec = ProcessSpec(argv=argv, env=environment.values, cwd=cwd, sandboxed=sandboxed)
        return spec, environment

    async def _run(self, request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        run = self._judge(request)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        sender = _Sender(writer, self.config.max_pending)
        spec, environment = self._spec(run)
        redact = Redactor(environment.secrets) if environment.secrets else None
        execution = await Execution.start(
            spec, spawner=self._spawner, capture_limit=0, sinks=[sender.feed], redact=redact
        )
        self._running.add(execution)
        writer.write(
            encode(
                {
                    "type": "started",
                    "confinement": self.config.confinement,
                    "roots": list(self._roots),
                    "timeout": run.timeout,
                    "staged": sorted(run.secrets),
                }
            )
        )
        try:
            outcome = await execution.finish(limit=run.timeout, grace=2.0)
        finally:
            self._running.discard(execution)
        await sender.finish(
            {
                "type": "exit",
                "status": outcome.status,
                "exit_code": outcome.exit_code,
                "duration": round(outcome.duration, 3),
                "trimmed": sender.trimmed,
            }
        )

    async def drain(self) -> None:
        """Wait until every command in flight has ended (clients gone or not)."""
        current = asyncio.current_task()
        while pending := [t for t in self._tasks if t is not current]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        for execution in list(self._running):
            execution.request_stop("stopped")
        await self.drain()
