"""Background shells: detached commands that outlive the turn and report when they end.

A background shell is a row in the store plus, while it runs, a process in this platform
instance. Its output goes to a ring buffer (recent output, in memory), a head buffer (for
the report) and a JSONL log on disk under the private run folder. When it exits, is
stopped, times out or is lost, the row is finished once and a completion report is queued
for the conversation that started it through the report sink (``services.reports``); without
a report sink the report waits in the row (``report_state = "pending"``) and is delivered by
:meth:`BackgroundShells.deliver_pending`.

At start-up, a row still marked running whose owning platform instance is gone (this
process restarted, or another process on this machine died) is marked lost and reported;
rows owned by a live process are left alone, so a CLI opening the store never steals a
running server's shells.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from corral.errors import NotFound, PolicyDenied, ToolError
from corral.policy.identity import Caller
from corral.secrets import Redactor
from corral.service_protocols import ReportSink
from corral.settings import Settings
from corral.shell.capture import HeadBuffer
from corral.shell.processes import proc_info, same_process, signal_members, wait_gone
from corral.shell.records import Owner, ShellRecord, ShellStore, new_shell_id, output_uri
from corral.shell.report import build_report
from corral.shell.runner import Execution, ProcessSpec, RunOutcome, Spawner
from corral.shell.shell_log import ShellLog, excerpt, read_rows

__all__ = [
    "LIVE_INSTANCES",
    "BackgroundShells",
    "ConversationAccess",
    "ShellLaunch",
]

log = logging.getLogger("corral.shell")

LIVE_INSTANCES: set[str] = set()
"""Platform instances open in this process, so start-up recovery spares their shells."""


class ConversationAccess(Protocol):
    """Who may read a conversation (and so its shells' output)."""

    async def can_read(self, conversation_id: str, caller: Caller) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellLaunch:
    """Everything a background shell needs besides its process."""

    spec: ProcessSpec
    user_id: str
    conversation_id: str | None
    run_id: str | None
    agent: str
    command: str
    cwd: str
    reason: str
    plane: str
    confinement: str
    limit: float
    cleanup: Callable[[], None] = lambda: None
    redact: Redactor | None = None
    spawned: Callable[[], None] = lambda: None
    """Runs once the process is started (the egress bridge then waits for its listener)."""


@dataclass(slots=True, kw_only=True)
class _Running:
    record: ShellRecord
    launch: ShellLaunch
    execution: Execution
    head: HeadBuffer
    log: ShellLog
    closing: bool = False
    task: asyncio.Task[None] | None = field(default=None)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever output arrives, so a reader can wait for more instead of polling."""


OTHERS_REFRESH_SECONDS = 1.0
"""How stale the list of shells run by other platform instances may be in a prompt."""


def _work_item(record: ShellRecord) -> dict[str, str]:
    command = record.command
    return {
        "kind": "shell",
        "id": record.id,
        "title": command if len(command) <= 120 else command[:119] + "…",
        "started_at": record.started_at.isoformat(),
    }


class BackgroundShells:
    def __init__(
        self,
        *,
        store: ShellStore,
        settings: Settings,
        reports: Callable[[], ReportSink | None],
        conversation_access: Callable[[], ConversationAccess | None],
        live: Callable[[], Awaitable[Mapping[str, Any]]],
        spawner: Spawner,
    ) -> None:
        self.store = store
        self._settings = settings
        self._reports = reports
        self._conversation_access = conversation_access
        self._live_settings = live
        self._spawner = spawner
        self.owner = Owner.this_process()
        LIVE_INSTANCES.add(self.owner.instance)
        self._running: dict[str, _Running] = {}
        self._others: dict[str, tuple[float, list[ShellRecord]]] = {}

    # -- starting -----------------------------------------------------------------------------

    def log_path(self, shell_id: str, run_id: str | None) -> Path:
        folder = run_id if run_id and run_id.replace("-", "").replace("_", "").isalnum() else None
        runs = self._settings.private_dir / "runs"
        return runs / (folder or "detached") / "shells" / f"{shell_id}.jsonl"

    async def start(self, launch: ShellLaunch) -> ShellRecord:
        await self.deliver_pending()  # catch up on reports left while no sink was registered
        live = await self._live_settings()
        limit = int(live["background_shells_per_user"])
        if await self.store.count_running(launch.user_id) >= limit:
            raise ToolError(
                f"you already have {limit} background shells running (live setting "
                "background_shells_per_user); wait for one to report or stop one first",
                code="too_many_shells",
            )
        shell_id = new_shell_id()
        path = self.log_path(shell_id, launch.run_id)
        shell_log = ShellLog(
            self._settings.private_dir, path, cap_bytes=int(live["background_shell_log_cap"])
        )
        head = HeadBuffer(int(live["shell_report_tail_chars"]))
        changed = asyncio.Event()

        def on_output(stream: str, text: str) -> None:
            head.append(text)
            shell_log.write(stream, text)
            changed.set()

        try:
            execution = await Execution.start(
                launch.spec,
                spawner=self._spawner,
                capture_limit=int(live["background_shell_ring"]),
                sinks=[on_output],
                redact=launch.redact,
            )
        except BaseException:
            shell_log.close()
            launch.cleanup()
            raise
        launch.spawned()
        try:
            record = await self.store.insert(
                id=shell_id,
                user_id=launch.user_id,
                conversation_id=launch.conversation_id,
                run_id=launch.run_id,
                agent=launch.agent,
                command=launch.command,
                cwd=launch.cwd,
                reason=launch.reason,
                plane=launch.plane,
                confinement=launch.confinement,
                owner=str(self.owner),
                pid=execution.pid,
                pid_start=execution.pid_start,
                log_path=str(path),
            )
        except BaseException:
            execution.kill_now()
            shell_log.close()
            launch.cleanup()
            raise
        running = _Running(
            record=record,
            launch=launch,
            execution=execution,
            head=head,
            log=shell_log,
            changed=changed,
        )
        self._running[shell_id] = running
        grace = int(live["shell_stop_grace_ms"]) / 1000
        running.task = asyncio.create_task(self._watch(running, grace))
        return record

    async def _watch(self, running: _Running, grace: float) -> None:
        try:
            outcome = await running.execution.finish(limit=running.launch.limit, grace=grace)
        finally:
            running.log.close()
            running.launch.cleanup()
        try:
            await self._finalize(running, outcome)
        except Exception:
            log.exception("could not record the end of background shell %s", running.record.id)
        finally:
            self._running.pop(running.record.id, None)
            running.changed.set()

    async def _finalize(self, running: _Running, outcome: RunOutcome) -> None:
        record = await self.store.get(running.record.id) or running.record
        status: str = outcome.status
        detail = ""
        if running.closing:
            status, detail = "lost", "The platform shut down while it ran; it was ended."
        elif record.stop_requested_by is not None:
            status, detail = "stopped", "It was stopped by the user who started it."
        elif status == "stopped":
            detail = "It was stopped by the user who started it."
        elif status == "timed_out":
            detail = f"It reached its time limit of {running.launch.limit:.0f} s and was ended."
        live = await self._live_settings()
        report = build_report(
            shell_id=record.id,
            command=record.command,
            status=status,
            exit_code=outcome.exit_code,
            duration_s=round(outcome.duration, 3),
            confinement=record.confinement,
            head=running.head.text(),
            tail=outcome.capture.text(whole_lines=False),
            total_chars=outcome.total_chars,
            budget=int(live["shell_report_tail_chars"]),
            detail=detail,
            output_uri=output_uri(record.id),
        )
        finished = await self.store.finish(
            record.id,
            status=status,
            exit_code=outcome.exit_code,
            duration_s=round(outcome.duration, 3),
            detail=detail,
            output_chars=outcome.total_chars,
            report=report.to_json(),
            report_state=self._report_state(record.conversation_id, live),
        )
        if finished:
            await self.deliver(record.id)

    @staticmethod
    def _report_state(conversation_id: str | None, live: Mapping[str, Any]) -> str:
        if not live["shell_background_notify"]:
            return "disabled"
        return "pending" if conversation_id else "no_conversation"

    # -- reports ------------------------------------------------------------------------------

    async def deliver(self, shell_id: str) -> bool:
        """Queue a pending report with the report sink; False when there is none (yet)."""
        sink = self._reports()
        if sink is None:
            return False
        if not await self.store.move_report(shell_id, from_state="pending", to_state="delivering"):
            return False
        record = await self.store.get(shell_id)
        if record is None or record.report is None or record.conversation_id is None:
            return False
        try:
            await sink.queue_report(
                conversation_id=record.conversation_id,
                user_id=record.user_id,
                source="shell",
                source_id=record.id,
                title=str(record.report.get("title", "")),
                text=str(record.report.get("text", "")),
                data=dict(record.report.get("data") or {}),
            )
        except Exception:
            log.exception("the report sink refused the report of shell %s; kept pending", shell_id)
            await self.store.move_report(shell_id, from_state="delivering", to_state="pending")
            return False
        await self.store.move_report(shell_id, from_state="delivering", to_state="reported")
        return True

    async def deliver_pending(self) -> int:
        """Deliver every pending report (call once a report sink is registered)."""
        count = 0
        for record in await self.store.pending_reports():
            count += await self.deliver(record.id)
        return count

    # -- start-up and shutdown ------------------------------------------------------------------

    async def recover(self) -> list[ShellRecord]:
        """Mark shells whose platform instance is gone as lost; return them."""
        lost: list[ShellRecord] = []
        for record in await self.store.running():
            if record.id in self._running or not self._orphaned(record):
                continue
            if await self._mark_lost(
                record, "The platform restarted while it ran; its process did not survive."
            ):
                lost.append(record)
        return lost

    def _orphaned(self, record: ShellRecord) -> bool:
        owner = Owner.parse(record.owner)
        if owner.instance in LIVE_INSTANCES:
            return False
        if owner.host != self.owner.host:
            return False  # another machine's shell: only that machine can tell
        if owner.pid == self.owner.pid:
            return True  # an earlier, closed platform instance of this process
        return not owner.process_alive()

    async def _mark_lost(self, record: ShellRecord, detail: str) -> bool:
        if record.pid is not None and same_process(record.pid, record.pid_start):
            info = proc_info(record.pid)
            if info is not None and info.pgrp == record.pid:
                signal_members(record.pid, signal.SIGKILL)
                await wait_gone(record.pid, 5.0)
        live = await self._live_settings()
        budget = int(live["shell_report_tail_chars"])
        found = excerpt(Path(record.log_path), budget=budget)
        report = build_report(
            shell_id=record.id,
            command=record.command,
            status="lost",
            exit_code=None,
            duration_s=None,
            confinement=record.confinement,
            head=found.head,
            tail=found.tail,
            total_chars=found.total,
            budget=budget,
            detail=detail,
            output_uri=output_uri(record.id),
        )
        finished = await self.store.finish(
            record.id,
            status="lost",
            exit_code=None,
            duration_s=None,
            detail=detail,
            output_chars=found.total or 0,
            report=report.to_json(),
            report_state=self._report_state(record.conversation_id, live),
        )
        if finished:
            await self.deliver(record.id)
        return finished

    async def close(self) -> None:
        """End every shell this instance runs (recorded as lost) and forget the instance."""
        tasks = []
        for running in list(self._running.values()):
            running.closing = True
            running.execution.request_stop("stopped")
            if running.task is not None:
                tasks.append(running.task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        LIVE_INSTANCES.discard(self.owner.instance)

    # -- reading and stopping -----------------------------------------------------------------

    async def running_work(self, conversation_id: str) -> list[dict[str, str]]:
        """Shells still running in a conversation, for the agent's prompt (``background_work``).

        Read on every step of every run, so it must be cheap: this instance's shells come
        from memory (exact), shells other platform instances started for the conversation
        from the store at most once per ``OTHERS_REFRESH_SECONDS``.
        """
        mine = [
            r.record for r in self._running.values() if r.record.conversation_id == conversation_id
        ]
        return [_work_item(r) for r in [*mine, *await self._others_running(conversation_id)]]

    async def _others_running(self, conversation_id: str) -> list[ShellRecord]:
        now = time.monotonic()
        cached = self._others.get(conversation_id)
        if cached is not None and now - cached[0] < OTHERS_REFRESH_SECONDS:
            return cached[1]
        records = await self.store.find(conversation_id=conversation_id, status="running")
        others = [r for r in records if r.owner != str(self.owner)]
        self._others[conversation_id] = (now, others)
        return others

    async def get(self, shell_id: str) -> ShellRecord:
        record = await self.store.get(shell_id)
        if record is None:
            raise NotFound(f"no background shell {shell_id!r}; `corral shells list` shows yours")
        return record

    async def can_read(self, record: ShellRecord, caller: Caller) -> bool:
        if record.user_id == caller.user_id:
            return True
        access = self._conversation_access()
        if access is None or record.conversation_id is None:
            return False
        return bool(await access.can_read(record.conversation_id, caller))

    async def readable(self, shell_id: str, caller: Caller) -> ShellRecord:
        record = await self.get(shell_id)
        if not await self.can_read(record, caller):
            raise NotFound(f"no background shell {shell_id!r} that you may read")
        return record

    async def output(
        self,
        shell_id: str,
        caller: Caller,
        *,
        after: int = 0,
        limit: int = 500,
        wait: float = 0.0,
    ) -> dict[str, Any]:
        """Log rows after sequence number ``after`` (the full log, one row per chunk).

        With ``wait``, a running shell with nothing new is waited on for up to that many
        seconds (a long poll: a watcher costs one request per burst of output).
        """
        record = await self.readable(shell_id, caller)
        path = Path(record.log_path)
        running = self._running.get(shell_id)
        if running is not None and wait > 0:
            running.changed.clear()
        rows = await asyncio.to_thread(read_rows, path, after=after, limit=limit)
        if not rows and running is not None and wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.changed.wait(), wait)
            rows = await asyncio.to_thread(read_rows, path, after=after, limit=limit)
            record = await self.get(shell_id)
        running = self._running.get(shell_id)
        return {
            "shell": record.to_json(),
            "rows": rows,
            "next_after": rows[-1]["seq"] if rows else after,
            "recent": running.execution.capture.text(whole_lines=False) if running else None,
        }

    async def wait_ended(self, shell_id: str, within: float) -> ShellRecord:
        """The shell's record once it has ended (or as it stands after ``within`` seconds)."""
        running = self._running.get(shell_id)
        if running is not None and running.task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(running.task), within)
        return await self.get(shell_id)

    async def stop(self, shell_id: str, caller: Caller) -> ShellRecord:
        """End a shell's process group (SIGTERM, grace, SIGKILL); only its starter may."""
        record = await self.readable(shell_id, caller)
        if record.user_id != caller.user_id:
            raise PolicyDenied(
                f"not yours to stop: background shell {shell_id!r} was started by another "
                "user, and only they can stop it",
                data={"rule": "not_owner", "shell_id": shell_id},
            )
        if record.status != "running":
            return record
        live = await self._live_settings()
        grace = int(live["shell_stop_grace_ms"]) / 1000
        running = self._running.get(shell_id)
        if running is not None and running.task is not None:
            running.execution.request_stop("stopped")
            await asyncio.shield(running.task)
            return await self.get(shell_id)
        await self.store.request_stop(shell_id, caller.user_id)
        if not self._orphaned(record) and record.pid is not None:
            await _terminate_elsewhere(record.pid, record.pid_start, grace)
            return await self.get(shell_id)
        await self._mark_lost(record, "Its platform instance was gone; it was marked lost.")
        return await self.get(shell_id)


async def _terminate_elsewhere(pid: int, start: int | None, grace: float) -> None:
    """Stop a group another process of this machine runs; that process records the end."""
    if not same_process(pid, start):
        return
    signal_members(pid, signal.SIGTERM, spare=frozenset({"bwrap"}))
    if not await wait_gone(pid, grace):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal_members(pid, signal.SIGKILL)
        await wait_gone(pid, 5.0)
