"""Handlers of the built-in package: one module per native tool, re-exported by name.

The services the handlers use are built by the composition root
(``corral.platform.built_in``), not by the package.
A native tool whose handler is not built yet is listed under ``pending`` in
``manifest.json`` and stays out of every visible set.

Each tool's module loads with its first call (:func:`~corral.tools.lazy_handler.lazy_handler`):
web_search's providers and fusion, web_fetch's extraction and the others are not
needed by a process that opens the platform without calling them (``corral tools list``).
``execute`` too: its module loads with its first policy check or call.
"""

from __future__ import annotations

from typing import Any

from corral.tools.lazy_handler import lazy_handler

_HERE = "corral.packages.core"
POLICY_HOOKS: dict[str, Any] = {"execute": lazy_handler(f"{_HERE}.execute", "execute_policy")}

ask_question = lazy_handler(f"{_HERE}.ask_question", "ask_question")
compact_history = lazy_handler(f"{_HERE}.compact_history", "compact_history")
connect = lazy_handler(f"{_HERE}.connect", "connect")
delegate = lazy_handler(f"{_HERE}.delegate", "delegate")
execute = lazy_handler(f"{_HERE}.execute", "execute")
todos = lazy_handler(f"{_HERE}.todos", "todos")
tool_search = lazy_handler(f"{_HERE}.tool_search", "tool_search")
web_fetch = lazy_handler(f"{_HERE}.web_fetch", "web_fetch")
web_search = lazy_handler(f"{_HERE}.web_search", "web_search")
workflow = lazy_handler(f"{_HERE}.workflow", "workflow")

__all__ = [
    "POLICY_HOOKS",
    "ask_question",
    "compact_history",
    "connect",
    "delegate",
    "execute",
    "todos",
    "tool_search",
    "web_fetch",
    "web_search",
    "workflow",
]
