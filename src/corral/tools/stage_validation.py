"""Stage ``validation``: the arguments must match the tool's input schema (validators
compiled once per tool spec). An error names each JSON pointer, so the model can fix it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.errors import InvalidArguments
from corral.tools.call import ToolCall
from corral.tools.contract import ToolSpec, pointer
from corral.tools.registry import LoadedTool
from corral.tools.results import ToolResult
from corral.tools.stages import Next
from corral.tools.validation import ArgumentValidator

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["QUOTE_MAX", "ArgumentValidation", "bounded"]

QUOTE_MAX = 300
"""Characters of a validation message kept: it may quote the offending value whole."""


class ArgumentValidation:
    name = "validation"

    def __init__(self) -> None:
        self._validators: dict[str, tuple[ToolSpec, ArgumentValidator]] = {}

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.enter(call)
        return await next(call)

    def enter(self, call: ToolCall) -> None:
        call.arguments = self.validate(call.tool, call.arguments)

    def validate(self, tool: LoadedTool, arguments: Any) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            raise InvalidArguments(
                f"arguments to {tool.name!r} must be a JSON object, not {type(arguments).__name__}"
            )
        # Keyed by the spec itself too: an MCP server that reconnects may change a schema.
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool.spec:
            cached = (tool.spec, ArgumentValidator(tool.spec.input_schema))
            self._validators[tool.name] = cached
        errors = cached[1].errors(arguments)
        if errors:
            problems = [_describe(e) for e in errors[:5]]
            more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
            raise InvalidArguments(
                f"invalid arguments for {tool.name!r}: "
                + "; ".join(p for _, p in problems)
                + more
                + ". Fix these and call again.",
                data={"errors": [{"pointer": at, "message": msg} for at, msg in problems]},
            )
        return arguments


def _describe(error: ValidationError) -> tuple[str, str]:
    path = list(error.absolute_path)
    required = error.validator_value
    if error.validator == "required" and isinstance(error.instance, dict):
        absent = (
            [r for r in required if r not in error.instance] if isinstance(required, list) else []
        )
        if absent:
            at = pointer([*path, absent[0]])
            return at, f"{at}: required property {absent[0]!r} is missing"
    schema = error.schema
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = (
            set((schema.get("properties") or {}).keys()) if isinstance(schema, dict) else set()
        )
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            at = pointer([*path, extra[0]])
            known = ", ".join(sorted(allowed)) or "none"
            return at, f"{at}: unknown property {extra[0]!r} (known: {known})"
    at = pointer(path) or "/"
    return at, f"{at}: {bounded(error.message)}"


def bounded(message: str) -> str:
    if len(message) <= QUOTE_MAX:
        return message
    return f"{message[:QUOTE_MAX]}… ({len(message) - QUOTE_MAX:,} more characters)"
