"""Operator hooks as configured: Claude Code's ``hooks`` object, read and checked.

The accepted shape is Claude Code's settings object, either whole (``{"hooks": {...}}``) or
its inner object: event name → list of groups, each ``{"matcher": "...", "hooks": [handler,
...]}``. A handler is ``{"type": "command", "command": "..."}`` or ``{"type": "http", "url":
"...", "headers": {...}}``, with an optional ``timeout`` in seconds (default 60) and
Corral's ``on_error`` (``"block"`` or ``"allow"``). Every problem is refused with the path
of the field at fault, e.g. ``hooks.PreToolUse[0].hooks[1].timeout``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args
from urllib.parse import urlsplit

from corral.errors import ConfigError
from corral.runtime.hooks.matchers import Matcher, compile_matcher

__all__ = [
    "BLOCKING_EVENTS",
    "DEFAULT_TIMEOUT_S",
    "EVENTS",
    "HookEvent",
    "HookGroup",
    "HookHandler",
    "HooksConfig",
    "OnError",
    "parse_hooks_config",
]

HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
    "Notification",
]
EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
BLOCKING_EVENTS: frozenset[str] = frozenset({"PreToolUse", "PermissionRequest"})
"""Events whose hooks default to ``on_error = "block"``: a failing guard must not let a
tool call through."""

OnError = Literal["block", "allow"]
DEFAULT_TIMEOUT_S = 60.0
_KNOWN_HANDLER_KEYS = frozenset(
    {"type", "command", "url", "headers", "timeout", "on_error", "statusMessage", "shell"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookHandler:
    """One hook: what runs, for how long, and what a failure means."""

    kind: Literal["command", "http"]
    command: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    on_error: OnError = "allow"
    where: str = ""
    """The path of this handler in its source, e.g. ``hooks.PreToolUse[0].hooks[1]``."""

    @property
    def target(self) -> str:
        """What runs: the command line or the URL."""
        return self.command if self.kind == "command" else self.url


@dataclass(frozen=True, slots=True, kw_only=True)
class HookGroup:
    """A matcher and the hooks it selects, from one source."""

    event: HookEvent
    matcher: Matcher
    handlers: tuple[HookHandler, ...]
    source: str
    """Where the group was configured: the file's path or ``live setting 'hooks'``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HooksConfig:
    """Every configured group, in declared order."""

    groups: tuple[HookGroup, ...] = ()

    def __add__(self, other: HooksConfig) -> HooksConfig:
        return HooksConfig(groups=self.groups + other.groups)

    @property
    def empty(self) -> bool:
        return not self.groups


def parse_hooks_config(value: Any, *, source: str) -> HooksConfig:
    """Check ``value`` (a parsed JSON document) and return its hooks; raise
    :class:`~corral.errors.ConfigError` naming the path of the first problem."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: hooks must be a JSON object of event names")
    inner: Any = value
    if "hooks" in value:
        extra = sorted(set(value) - {"hooks"})
        if extra:
            raise ConfigError(
                f"{source}: unknown key {extra[0]!r} next to 'hooks'; give the hooks object "
                "alone (other Claude Code settings do not apply here)"
            )
        inner = value["hooks"]
    if not isinstance(inner, Mapping):
        raise ConfigError(f"{source}: hooks must be a JSON object of event names")
    groups: list[HookGroup] = []
    for event, entries in inner.items():
        if event not in EVENTS:
            raise ConfigError(
                f"{source}: hooks.{event} is not a hook event; use one of {', '.join(EVENTS)}"
            )
        path = f"hooks.{event}"
        if not isinstance(entries, list):
            raise ConfigError(f"{source}: {path} must be a list of matcher groups")
        for index, entry in enumerate(entries):
            groups.append(_group(cast(HookEvent, event), entry, f"{path}[{index}]", source))
    return HooksConfig(groups=tuple(groups))


def _group(event: HookEvent, entry: Any, path: str, source: str) -> HookGroup:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{source}: {path} must be an object with 'matcher' and 'hooks'")
    unknown = sorted(set(entry) - {"matcher", "hooks"})
    if unknown:
        raise ConfigError(f"{source}: {path}.{unknown[0]} is not a field of a matcher group")
    raw_matcher = entry.get("matcher", "")
    if raw_matcher is None:
        raw_matcher = ""
    if not isinstance(raw_matcher, str):
        raise ConfigError(f"{source}: {path}.matcher must be a string")
    try:
        matcher = compile_matcher(raw_matcher, event=event)
    except ValueError as exc:
        raise ConfigError(f"{source}: {path}.matcher {raw_matcher!r} {exc}") from None
    handlers = entry.get("hooks")
    if not isinstance(handlers, list) or not handlers:
        raise ConfigError(f"{source}: {path}.hooks must be a non-empty list of hooks")
    return HookGroup(
        event=event,
        matcher=matcher,
        handlers=tuple(
            _handler(event, item, f"{path}.hooks[{i}]", source) for i, item in enumerate(handlers)
        ),
        source=source,
    )


def _handler(event: HookEvent, item: Any, path: str, source: str) -> HookHandler:
    def refuse(message: str) -> ConfigError:
        return ConfigError(f"{source}: {path}{message}")

    if not isinstance(item, Mapping):
        raise refuse(" must be an object with 'type' and 'command' or 'url'")
    unknown = sorted(set(item) - _KNOWN_HANDLER_KEYS)
    if unknown:
        raise refuse(f".{unknown[0]} is not a field of a hook")
    kind = item.get("type")
    if kind not in ("command", "http"):
        raise refuse(f".type must be 'command' or 'http', not {kind!r}")
    timeout = item.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise refuse(".timeout must be a number of seconds above 0")
    default_on_error: OnError = "block" if event in BLOCKING_EVENTS else "allow"
    on_error = item.get("on_error", default_on_error)
    if on_error not in ("block", "allow"):
        raise refuse(f".on_error must be 'block' or 'allow', not {on_error!r}")
    shell = item.get("shell", "bash")
    if shell not in ("bash", "sh"):
        raise refuse(f".shell {shell!r} is not supported here; commands run through /bin/sh")
    common: dict[str, Any] = {
        "timeout_s": float(timeout),
        "on_error": on_error,
        "where": path,
    }
    if kind == "command":
        command = item.get("command")
        if not isinstance(command, str) or not command.strip():
            raise refuse(".command must be a non-empty string")
        if "url" in item or "headers" in item:
            raise refuse(": a command hook takes no 'url' or 'headers'")
        return HookHandler(kind="command", command=command, **common)
    url = item.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise refuse(".url must be an http:// or https:// URL")
    if not urlsplit(url).hostname:
        raise refuse(f".url {url!r} names no host")
    headers = item.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise refuse(".headers must be an object of text values")
    if "command" in item:
        raise refuse(": an http hook takes no 'command'")
    return HookHandler(kind="http", url=url, headers=dict(headers), **common)
