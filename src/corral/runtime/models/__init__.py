"""Models: ``provider:model`` strings resolved through pydantic-ai-slim's model layer.

pydantic-ai loads only when a model is resolved or a script parsed: :class:`ModelRegistry`
and :class:`MediaSupport` are light, and the script names below load on first use (PEP 562),
so a command that opens the platform without talking to a model never imports the stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from corral.runtime.models.providers import MediaSupport
from corral.runtime.models.registry import ModelRegistry, ResolvedModel

if TYPE_CHECKING:
    from corral.runtime.models.script import Script, load_script, parse_script, script_model

__all__ = [
    "MediaSupport",
    "ModelRegistry",
    "ResolvedModel",
    "Script",
    "load_script",
    "parse_script",
    "script_model",
]

_LAZY = dict.fromkeys(
    ("Script", "load_script", "parse_script", "script_model"), "corral.runtime.models.script"
)

# Hidden from type checkers, as in ``corral/__init__.py``: they read the imports above.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        home = _LAZY.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
