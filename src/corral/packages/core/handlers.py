"""Handlers of the built-in package: one module per native tool, re-exported by name.

The services the handlers use are built by the composition root
(``corral.platform.built_in``), not by the package.
A native tool whose handler is not built yet is listed under ``pending`` in
``manifest.json`` and stays out of every visible set.
"""

from __future__ import annotations

from typing import Any

from corral.packages.core.ask_question import ask_question
from corral.packages.core.compact_history import compact_history
from corral.packages.core.connect import connect
from corral.packages.core.delegate import delegate
from corral.packages.core.execute import execute, execute_policy
from corral.packages.core.todos import todos
from corral.packages.core.tool_search import tool_search
from corral.packages.core.web_fetch import web_fetch
from corral.packages.core.web_search import web_search
from corral.packages.core.workflow import workflow

POLICY_HOOKS: dict[str, Any] = {"execute": execute_policy}

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
