"""Running one command: spawn it as its own process group, stream its output, end it.

Stop and timeout end the whole group the same way: SIGTERM to every process of the command
(the sandbox's own bubblewrap processes are spared so the command sees the signal first),
a short grace, then SIGKILL to the group. Inside bubblewrap, and under Landlock as root, the
command also has its own PID namespace, so anything that left the group dies when the
namespace's init does; otherwise the runner also signals every descendant it can find (the
Landlock launcher, a child subreaper, keeps daemons among them). Output is read in chunks
and handed to sinks (the capture, live frames, a background shell's log) as text; nothing
keeps more than its own cap. Once the command has ended, reading stops after a short bound
even when a detached process still holds the pipes.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from corral.secrets import Redactor
from corral.shell.capture import TailBuffer
from corral.shell.child_exec import exec_child
from corral.shell.processes import (
    descendants,
    group_members,
    kill_group,
    signal_members,
    start_time,
    wait_gone,
)
from corral.shell.uid_switch import switched_argv

__all__ = [
    "CHUNK_BYTES",
    "ChildSetup",
    "Execution",
    "OutputSink",
    "ProcessSpec",
    "RunOutcome",
    "RunStatus",
    "Spawner",
    "spawn_process",
]

log = logging.getLogger("corral.shell")

CHUNK_BYTES = 65_536
DRAIN_SECONDS = 2.0
"""How long output is still read after the command ended (a detached process may hold the
pipe open in unconfined mode; inside the sandbox the namespace is gone by then)."""

RunStatus = Literal["exited", "stopped", "timed_out"]
OutputSink = Callable[[str, str], None]
_SANDBOX_PROCESSES = frozenset({"bwrap"})

TEARDOWN_SECONDS = 10.0
"""How long a stopped sandbox's namespace may take to end once its init is killed: its
processes must each run their exit, which a loaded machine can put off for over a second."""


class ChildSetup(Protocol):
    """Confinement a child applies to itself between fork and exec (the Landlock tier)."""

    @property
    def uid(self) -> int | None:
        """Switch to this uid (and gid, no supplementary groups) first; None keeps ours."""
        ...

    def apply(self) -> None:
        """Runs in the child after the uid switch; raises :class:`OSError` to refuse."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpec:
    """What to start: the full argv (bubblewrap's or bash's), environment and folder."""

    argv: Sequence[str]
    env: dict[str, str]
    cwd: str
    sandboxed: bool
    """True when ``argv`` starts bubblewrap (own PID namespace, dies with its parent)."""
    seccomp: bytes | None = None
    """A BPF program for bubblewrap: the spawner hands it over as ``--seccomp FD``."""
    child: ChildSetup | None = None
    run_as: int | None = None
    """Host uid (and gid, no supplementary groups) bubblewrap itself runs as: its user
    namespace then maps the sandbox's uid to this one, so nothing a command creates on the
    host is owned by the platform's user (root). None: the platform's own identity."""
    pass_fds: tuple[int, ...] = ()
    """Descriptors the command inherits (the egress bridge's end of its socket pair)."""


class Spawner(Protocol):
    """Starts a process; the seam tests replace to simulate a spawn failure."""

    def __call__(self, spec: ProcessSpec) -> Awaitable[asyncio.subprocess.Process]: ...


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _seccomp_pipe(program: bytes) -> int:
    """A pipe holding ``program`` to its end; returns the read side (bubblewrap reads it)."""
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few KB: well within a pipe's buffer
    finally:
        os.close(write)
    return read


def _confining(child: ChildSetup) -> Callable[[], None]:
    def preexec() -> None:  # pragma: no cover - runs in the child between fork and exec
        _die_with_parent()  # after the uid switch, which clears the parent-death signal
        child.apply()

    return preexec


async def spawn_process(spec: ProcessSpec) -> asyncio.subprocess.Process:
    """The default spawner: a new session (so a new process group), no stdin, piped output.

    A child that fails to confine itself never runs the command: the failure surfaces
    here as :class:`OSError`.
    """
    argv = list(spec.argv)
    passed: list[int] = []
    if spec.seccomp is not None:
        passed.append(_seccomp_pipe(spec.seccomp))
        argv[1:1] = ["--seccomp", str(passed[0])]
    preexec: Callable[[], None] | None = None if spec.sandboxed else _die_with_parent
    uid = spec.run_as
    if spec.child is not None:
        preexec, uid = _confining(spec.child), spec.child.uid
    elif uid is not None and preexec is None:
        switched = switched_argv(argv, uid)
        if switched is not None:  # the same switch, in a child started with vfork()
            argv, uid = switched, None
    try:
        return await exec_child(
            argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=spec.env,
            cwd=spec.cwd,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=[*passed, *spec.pass_fds],
            user=uid,
            group=uid,
            extra_groups=[] if uid is not None else None,
        )
    except subprocess.SubprocessError as exc:
        raise OSError(f"the sandbox could not be applied in the child ({exc})") from None
    finally:
        for fd in passed:
            os.close(fd)


@dataclass(slots=True, kw_only=True)
class RunOutcome:
    status: RunStatus
    exit_code: int | None
    duration: float
    capture: TailBuffer
    chars: dict[str, int] = field(default_factory=dict)
    undrained: bool = False
    """Output was still arriving from a detached process when reading stopped."""

    @property
    def total_chars(self) -> int:
        return sum(self.chars.values())


HOLD_SECONDS = 0.3
"""How long output that could begin a secret is held back when nothing follows it."""


class Execution:
    """One started command, from spawn to a :class:`RunOutcome`."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        spec: ProcessSpec,
        *,
        capture_limit: int,
        sinks: Sequence[OutputSink] = (),
        redact: Redactor | None = None,
        identify: bool = True,
    ) -> None:
        self.process = process
        self.spec = spec
        self.pid = process.pid
        self.pgid = process.pid  # leader of its own session and group
        # Read while the child may still be exec'ing (the read then waits on it): only for
        # those that find the process again later by pid (background shells).
        self.pid_start = start_time(process.pid) if identify else None
        self.started = time.monotonic()
        self.capture = TailBuffer(capture_limit)
        self.chars = {"stdout": 0, "stderr": 0}
        self.stop_reason: RunStatus | None = None
        self._stop = asyncio.Event()
        self._sinks = [self.capture_sink, *sinks]
        # One stream each: a secret split across two reads of a pipe is still caught.
        self._redacting = {
            name: redact.stream() for name in ("stdout", "stderr") if redact is not None
        }
        self._readers = [
            asyncio.create_task(self._pump(process.stdout, "stdout")),
            asyncio.create_task(self._pump(process.stderr, "stderr")),
        ]
        self._outcome: RunOutcome | None = None

    @classmethod
    async def start(
        cls,
        spec: ProcessSpec,
        *,
        spawner: Spawner = spawn_process,
        capture_limit: int,
        sinks: Sequence[OutputSink] = (),
        redact: Redactor | None = None,
        identify: bool = True,
    ) -> Execution:
        """Spawn ``spec``; ``identify`` also records the process's start time
        (:attr:`pid_start`), which tells it apart from a later process with its pid."""
        process = await spawner(spec)
        return cls(
            process,
            spec,
            capture_limit=capture_limit,
            sinks=sinks,
            redact=redact,
            identify=identify,
        )

    def capture_sink(self, stream: str, text: str) -> None:
        self.capture.append(text)

    def request_stop(self, reason: RunStatus = "stopped") -> None:
        """Ask the command to end (Stop, a timeout, a kill from the shells route)."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self._stop.set()

    @property
    def done(self) -> bool:
        return self._outcome is not None

    async def finish(self, *, limit: float | None, grace: float) -> RunOutcome:
        """Wait for the command to end by itself, by Stop, or ``limit`` seconds after start."""
        # Not process.wait(): on Python 3.11 it also waits for every pipe to close, so a
        # detached process holding stdout would hold the call (a 2 s timeout took 60 s).
        waiter = asyncio.ensure_future(wait_gone(self.pid, None))
        stopper = asyncio.ensure_future(self._stop.wait())
        try:
            remaining = None
            if limit is not None:
                remaining = max(0.0, self.started + limit - time.monotonic())
            done, _ = await asyncio.wait(
                {waiter, stopper}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if waiter not in done:
                if not done:
                    self.request_stop("timed_out")
                await self._terminate(grace, waiter)
            else:
                self._sweep()
            await waiter
            undrained = await self._drain()
            code = await self.process.wait()  # prompt: the pipes are closed by now
        except asyncio.CancelledError:
            self.kill_now()
            waiter.cancel()
            raise
        finally:
            stopper.cancel()
        duration = time.monotonic() - self.started
        self._outcome = RunOutcome(
            status=self.stop_reason or "exited",
            exit_code=code,
            duration=duration,
            capture=self.capture,
            chars=dict(self.chars),
            undrained=undrained,
        )
        return self._outcome

    def kill_now(self) -> None:
        """SIGKILL everything at once (the task running :meth:`finish` was cancelled)."""
        if not self.spec.sandboxed:
            for pid in descendants(self.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        kill_group(self.pgid)
        for reader in self._readers:
            reader.cancel()

    async def _terminate(self, grace: float, waiter: asyncio.Future[bool]) -> None:
        spare = _SANDBOX_PROCESSES if self.spec.sandboxed else frozenset()
        inits = [
            m.pid
            for m in group_members(self.pgid)
            if m.comm in _SANDBOX_PROCESSES and m.pid != self.pid
        ]
        strays = [] if self.spec.sandboxed else descendants(self.pid)
        signal_members(self.pgid, signal.SIGTERM, spare=spare)
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), grace)
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        kill_group(self.pgid)
        await waiter
        for init in inits:
            # The namespace's init exits only after every process inside it is gone.
            if not await wait_gone(init, TEARDOWN_SECONDS):
                log.warning(
                    "the sandbox of a stopped command (init pid %s) had not ended %s s after "
                    "it was killed",
                    init,
                    TEARDOWN_SECONDS,
                )

    def _sweep(self) -> None:
        """After a normal exit: nothing the command left behind outlives it."""
        kill_group(self.pgid)

    async def _drain(self) -> bool:
        """Read what is left for a bounded time; then stop reading and close our pipe ends."""
        _, pending = await asyncio.wait(self._readers, timeout=DRAIN_SECONDS)
        for reader in pending:
            reader.cancel()
        if pending:
            transport = getattr(self.process, "_transport", None)
            if isinstance(transport, asyncio.SubprocessTransport):
                for fd in (1, 2):
                    pipe = transport.get_pipe_transport(fd)
                    if pipe is not None:
                        pipe.close()
        return bool(pending)

    async def _pump(self, reader: asyncio.StreamReader | None, stream: str) -> None:
        if reader is None:
            return
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        redacting = self._redacting.get(stream)
        while True:
            if redacting is not None and redacting.holding:
                try:  # a held tail is shown once the command pauses (a prompt, "waiting")
                    data = await asyncio.wait_for(reader.read(CHUNK_BYTES), HOLD_SECONDS)
                except TimeoutError:
                    self._emit(stream, redacting.flush())
                    continue
            else:
                data = await reader.read(CHUNK_BYTES)
            text = decoder.decode(data, final=not data)
            if redacting is not None:
                text = redacting.feed(text) + ("" if data else redacting.end())
            if text:
                self._emit(stream, text)
            if not data:
                return

    def _emit(self, stream: str, text: str) -> None:
        self.chars[stream] = self.chars.get(stream, 0) + len(text)
        for sink in self._sinks:
            try:
                sink(stream, text)
            except Exception:
                log.exception("an output sink failed")
