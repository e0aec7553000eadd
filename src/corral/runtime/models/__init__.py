"""Models: ``provider:model`` strings resolved through pydantic-ai-slim's model layer."""

from corral.runtime.models.providers import MediaSupport
from corral.runtime.models.registry import ModelRegistry, ResolvedModel
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
