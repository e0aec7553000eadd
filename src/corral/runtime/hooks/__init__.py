"""Operator hooks, Claude Code compatible: configuration, matchers, running, combining.

Build the engine once at start-up with :func:`build_hooks` and ask it per event::

    hooks = build_hooks(kernel)          # a broken <data_dir>/hooks.json raises ConfigError
    outcome = await hooks.run("PreToolUse", {"tool_input": args, "tool_use_id": id,
                                             "session_id": conversation_id}, tool="execute")

``hooks.configured`` is a cheap check for a pipeline stage to skip everything when no hook is
configured; :func:`tool_hook_input` builds a tool event's input. See
:mod:`corral.runtime.hooks.outcome` for what each answer means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from corral.errors import ConfigError, UsageError
from corral.kernel import Kernel
from corral.runtime.hooks.config import (
    EVENTS,
    HookEvent,
    HookGroup,
    HookHandler,
    HooksConfig,
    parse_hooks_config,
)
from corral.runtime.hooks.engine import LIVE_KEY, Hooks, MatchedHook, hook_label, permission_mode
from corral.runtime.hooks.handlers import HookRunner
from corral.runtime.hooks.matchers import CLAUDE_CODE_TOOLS, compile_matcher, tool_names
from corral.runtime.hooks.outcome import Decision, HookOutcome, HookRecord
from corral.runtime.hooks.tool_input import tool_hook_input
from corral.settings import Settings

if TYPE_CHECKING:
    from corral.shell.egress.helpers import HelperNetwork

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "EVENTS",
    "HOOKS_FILE",
    "LIVE_KEY",
    "Decision",
    "HookEvent",
    "HookGroup",
    "HookHandler",
    "HookOutcome",
    "HookRecord",
    "HookRunner",
    "Hooks",
    "HooksConfig",
    "MatchedHook",
    "added_context",
    "build_hooks",
    "check_live_hooks",
    "compile_matcher",
    "hook_label",
    "hooks_file_problems",
    "parse_hooks_config",
    "permission_mode",
    "tool_hook_input",
    "tool_names",
]

HOOKS_FILE = "hooks.json"


async def added_context(hooks: Hooks | None, event: str, payload: Mapping[str, Any]) -> list[str]:
    """What the hooks of an event that cannot block (SessionStart, SubagentStart...) add as
    context for the model; nothing when no hook is configured."""
    if hooks is None or not hooks.configured:
        return []
    return (await hooks.run(event, payload)).additional_context


def hooks_file_problems(settings: Settings) -> list[str]:
    """What is wrong with ``<data_dir>/hooks.json`` (nothing when it is absent or sound),
    checked as start-up checks it: a platform refuses to start on it, and a running one
    keeps its previous hooks (``/health`` counts it under ``hook_problems``)."""
    runner = HookRunner(project_dir=settings.drive_dir, sandbox_uid=settings.sandbox_uid)
    try:
        Hooks(runner, file=settings.data_dir / HOOKS_FILE).load()
    except ConfigError as exc:
        return [str(exc)]
    return []


def check_live_hooks(value: Any) -> None:
    """Refuse a new value of the live setting ``hooks`` that does not parse, with the reason."""
    try:
        parse_hooks_config(value, source=f"live setting {LIVE_KEY!r}")
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def build_hooks(kernel: Kernel) -> Hooks:
    """The engine for this platform: ``<data_dir>/hooks.json`` then the live setting.

    Reads the file now (a broken file raises :class:`ConfigError`) and has the admin API
    check every new value of the live setting."""
    settings = kernel.settings

    def live() -> Mapping[str, Any] | None:
        snapshot = kernel.config.latest
        return snapshot.state.live if snapshot is not None else None

    def package_of(tool: str) -> str | None:
        loaded = kernel.registry.tools.get(tool)
        return loaded.package if loaded is not None else None

    async def network(conversation_id: str | None) -> HelperNetwork | None:
        from corral.shell.service import ShellService

        shells = kernel.services.get(ShellService)  # installed after the hooks are built
        if shells is None:
            return None
        return await shells.helper_network(conversation_id=conversation_id)

    hooks = Hooks(
        HookRunner(
            project_dir=settings.drive_dir, sandbox_uid=settings.sandbox_uid, network=network
        ),
        file=settings.data_dir / HOOKS_FILE,
        live=live,
        refresh_live=kernel.config.snapshot,
        package_of=package_of,
    )
    hooks.load()
    kernel.admin.check_live(LIVE_KEY, check_live_hooks)
    return hooks
