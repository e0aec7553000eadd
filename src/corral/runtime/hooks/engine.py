"""The hook engine: which hooks match an event, running them, and their combined outcome.

Hooks come from two sources, both applied, the file's groups first: ``<data_dir>/hooks.json``
and the admin-only live setting ``hooks``. The file is read again when its modification
time or size changes (one ``stat`` a second at most); the live setting when the configuration
snapshot hands over another value. A source that stops parsing keeps its previous hooks in
force; the problem is logged and listed in :attr:`Hooks.problems` (``corral hooks list``
and ``corral doctor`` show it). At start-up a broken file refuses to start
(:meth:`Hooks.load`), since the operator meant those hooks to hold.

The integrator's use, per tool call::

    if hooks.configured:                      # a cheap check: nothing configured, no cost
        outcome = await hooks.run("PreToolUse", {"tool_input": args, ...}, tool=name)
        if outcome.blocked: ...               # refuse with outcome.reason
        args = outcome.updated_input or args  # validate again against the schema
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import StatusCode

from corral.errors import ConfigError, UsageError
from corral.runtime.hooks.config import (
    EVENTS,
    HookGroup,
    HookHandler,
    HooksConfig,
    parse_hooks_config,
)
from corral.runtime.hooks.handlers import HookFailure, HookRunner, Reply
from corral.runtime.hooks.matchers import MATCHER_FIELDS, TOOL_EVENTS, tool_names
from corral.runtime.hooks.outcome import (
    BadOutput,
    HookOutcome,
    HookRecord,
    Verdict,
    read_reply,
    stronger,
)
from corral.tracing import Attr
from corral.tracing.children import child_span

__all__ = ["LIVE_KEY", "Hooks", "MatchedHook", "permission_mode"]

log = logging.getLogger("corral.hooks")

LIVE_KEY = "hooks"
_INTERPRETERS = frozenset(
    {"sh", "bash", "dash", "zsh", "python", "python3", "node", "bun", "deno", "ruby", "perl",
     "uv", "npx", "env", "exec"}
)  # fmt: skip
_PERMISSION_MODES = {"safe": "default", "balanced": "acceptEdits", "auto": "bypassPermissions"}


def permission_mode(profile: str) -> str:
    """A Corral permission profile as Claude Code's ``permission_mode``."""
    return _PERMISSION_MODES.get(profile, "default")


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchedHook:
    """A hook that applies to one event, with the group it came from."""

    group: HookGroup
    handler: HookHandler

    @property
    def name(self) -> str:
        return hook_label(self.handler)


def hook_label(handler: HookHandler) -> str:
    """A short name for messages: the script's file name, or the URL's host and path."""
    if handler.kind == "http":
        parts = urlsplit(handler.url)
        return f"{parts.hostname}{parts.path}"
    try:
        words = shlex.split(handler.command)
    except ValueError:
        words = handler.command.split()
    for word in words:
        name = os.path.basename(word.rstrip("/")) or word
        if "=" in word and "/" not in word.split("=", 1)[0]:
            continue  # VAR=value before the program
        if name not in _INTERPRETERS and not name.startswith("-"):
            return name
    return words[0] if words else handler.command


@dataclass(slots=True)
class _Source:
    label: str
    config: HooksConfig
    problem: str = ""


class Hooks:
    """Operator hooks for every event of a run."""

    def __init__(
        self,
        runner: HookRunner,
        *,
        file: Path | None = None,
        live: Callable[[], Mapping[str, Any] | None] | None = None,
        refresh_live: Callable[[], Awaitable[object]] | None = None,
        package_of: Callable[[str], str | None] = lambda _tool: None,
        file_recheck_s: float = 1.0,
    ) -> None:
        self._runner = runner
        self._file = file
        self._file_seen: tuple[int, int] | None = None
        self._file_recheck_s = file_recheck_s
        self._file_checked_at = -file_recheck_s
        self._live = live
        self._refresh_live = refresh_live
        self._live_seen: Any = None
        self._package_of = package_of
        self._from_file = _Source(str(file) if file else "", HooksConfig())
        self._from_live = _Source(f"live setting {LIVE_KEY!r}", HooksConfig())
        self._config = HooksConfig()
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever the hooks in force change (a source was re-read)."""
        self._listeners.append(listener)

    # -- sources ----------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file at start-up; a broken file raises :class:`ConfigError`."""
        self._check_file(strict=True)

    @property
    def configured(self) -> bool:
        """Whether any hook is configured (well under a microsecond): the file as of its
        last check (at most a second old), the live setting as of the configuration
        snapshot last loaded."""
        self._check_file()
        self._check_live()
        return not self._config.empty

    @property
    def problems(self) -> list[str]:
        """Sources that failed to parse; their previous hooks stay in force."""
        return [s.problem for s in (self._from_file, self._from_live) if s.problem]

    @property
    def groups(self) -> tuple[HookGroup, ...]:
        return self._config.groups

    async def refresh(self) -> None:
        """Take up changes of the file and of the live setting."""
        if self._refresh_live is not None:
            await self._refresh_live()
        self._check_file()
        self._check_live()

    def _check_live(self) -> None:
        live = self._live() if self._live is not None else None
        if live is None:
            return  # no snapshot loaded since the last write: keep what is in force
        value = live.get(LIVE_KEY)
        if value is self._live_seen:
            return
        self._live_seen = value
        self._set(self._from_live, value or {}, strict=False)

    def _check_file(self, *, strict: bool = False) -> None:
        if self._file is None:
            return
        now = time.monotonic()
        if not strict and now - self._file_checked_at < self._file_recheck_s:
            return  # a stat costs ~3 µs, a quarter of the whole pipeline's overhead
        self._file_checked_at = now
        try:
            stat = self._file.stat()
            seen = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            seen = None
        if seen == self._file_seen and not strict:
            return
        self._file_seen = seen
        if seen is None:
            self._set(self._from_file, {}, strict=strict)
            return
        try:
            document = json.loads(self._file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._refuse(self._from_file, f"{self._file}: not readable JSON: {exc}", strict)
            return
        self._set(self._from_file, document, strict=strict)

    def _set(self, source: _Source, value: Any, *, strict: bool) -> None:
        try:
            source.config = parse_hooks_config(value, source=source.label)
        except ConfigError as exc:
            self._refuse(source, str(exc), strict)
            return
        source.problem = ""
        self._config = self._from_file.config + self._from_live.config
        for listener in self._listeners:
            listener()

    def _refuse(self, source: _Source, problem: str, strict: bool) -> None:
        if strict:
            raise ConfigError(f"operator hooks: {problem}")
        source.problem = f"{problem} (the previous hooks of this source stay in force)"
        log.warning("operator hooks not reloaded: %s", source.problem)

    # -- matching ---------------------------------------------------------------------------

    def matching(
        self, event: str, tool: str | None = None, *, value: str | None = None
    ) -> list[MatchedHook]:
        """The hooks ``event`` runs, in declared order. ``tool`` is the Corral tool name of
        a tool event; ``value`` what another event's matcher is held against (SessionStart's
        ``source``, PreCompact's ``trigger``...)."""
        if event not in EVENTS:
            raise UsageError(f"{event!r} is not a hook event; use one of {', '.join(EVENTS)}")
        if event in TOOL_EVENTS:
            candidates = tool_names(tool, package=self._package_of(tool)) if tool else ()
        else:
            candidates = (value,) if value is not None else ()
        ignores_matcher = MATCHER_FIELDS[event] is None
        return [
            MatchedHook(group=group, handler=handler)
            for group in self._config.groups
            if group.event == event
            and (ignores_matcher or group.matcher.matches_all or group.matcher.matches(candidates))
            for handler in group.handlers
        ]

    # -- running ----------------------------------------------------------------------------

    def hook_input(
        self, event: str, payload: Mapping[str, Any], tool: str | None
    ) -> dict[str, Any]:
        """The JSON a hook receives: ``payload`` with Claude Code's common fields filled."""
        data: dict[str, Any] = {
            "session_id": "",
            "transcript_path": "",
            "cwd": str(self._runner.project_dir),
            "permission_mode": "default",
            **payload,
            "hook_event_name": event,
        }
        if tool is not None and "tool_name" not in payload:
            data["tool_name"] = tool_names(tool, package=self._package_of(tool))[0]
        return data

    async def run(
        self, event: str, payload: Mapping[str, Any], *, tool: str | None = None
    ) -> HookOutcome:
        """Run the hooks matching ``event`` (and ``tool``) one after another; see
        :mod:`corral.runtime.hooks.outcome` for how their answers combine."""
        await self.refresh()
        field = MATCHER_FIELDS.get(event)
        raw = payload.get(field) if field and field != "tool_name" else None
        matched = self.matching(event, tool, value=raw if isinstance(raw, str) else None)
        outcome = HookOutcome()
        if not matched:
            return outcome
        data = self.hook_input(event, payload, tool)
        for hook in matched:
            verdict, record = await self._one(hook, data)
            outcome.records.append(record)
            if verdict.updated_input is not None:
                data["tool_input"] = verdict.updated_input
                outcome.updated_input = verdict.updated_input
            if verdict.additional_context:
                outcome.additional_context.append(verdict.additional_context)
            if verdict.system_message:
                outcome.system_messages.append(verdict.system_message)
            decided = stronger(outcome.decision, verdict.decision)
            if decided != outcome.decision:
                outcome.decision = decided
                verb = {"deny": "blocked", "ask": "sent for approval", "allow": "allowed"}
                because = f": {verdict.reason}" if verdict.reason else ""
                outcome.reason = f"{verb[decided or 'allow']} by hook {hook.name}{because}"
            if verdict.decision == "deny":
                outcome.stop = verdict.stop
                break
        return outcome

    async def _one(self, hook: MatchedHook, data: dict[str, Any]) -> tuple[Verdict, HookRecord]:
        """One hook, in a span ``hook {event} {name}`` with its outcome while traced."""
        event = hook.group.event
        attributes = {Attr.HOOK_EVENT: event, Attr.HOOK_KIND: hook.handler.kind}
        with child_span(f"hook {event} {hook.name}", attributes) as span:
            verdict, record = await self._answer(hook, data)
            if span is not None:
                span.set_attribute(Attr.HOOK_OUTCOME, record.outcome)
                if record.error:
                    span.set_attribute(Attr.ERROR_TYPE, "hook_failed")
                    span.set_status(StatusCode.ERROR, record.error[:500])
        return verdict, record

    async def _answer(self, hook: MatchedHook, data: dict[str, Any]) -> tuple[Verdict, HookRecord]:
        event = hook.group.event
        started = time.perf_counter()
        error = ""
        try:
            reply: Reply = await self._runner.run(
                hook.handler, json.dumps(data, ensure_ascii=False, default=str).encode()
            )
            verdict = read_reply(event, reply)
        except (HookFailure, BadOutput, OSError) as exc:  # OSError: its home could not be made
            error = str(exc)
            if hook.handler.on_error == "block":
                verdict = Verdict(decision="deny", reason=f"the hook failed: {error}")
            else:
                verdict = Verdict()
            log.warning("hook %s (%s) failed: %s", hook.name, hook.handler.where, error)
        record = HookRecord(
            hook=hook.name,
            target=hook.handler.target,
            event=event,
            source=f"{hook.group.source} {hook.handler.where}",
            outcome="error"
            if error
            else verdict.decision or ("context" if verdict.additional_context else "no_opinion"),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            reason=verdict.reason,
            error=error,
            updated_input=verdict.updated_input is not None,
        )
        return verdict, record
