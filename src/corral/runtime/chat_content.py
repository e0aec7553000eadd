"""A model request's content for its ``chat`` span, in the GenAI conventions' opt-in
attributes (``gen_ai.system_instructions``, ``gen_ai.input.messages``,
``gen_ai.output.messages``: JSON of role + parts), set only while the admin's
``trace_content`` is on.

Each text is capped and redacted like the tool content of ``execute_tool`` spans; a tool
call's secret arguments are left out as in rows. The input keeps the newest messages that
fit :data:`MESSAGES_CAP` characters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.trace import Span
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

from corral.tools.call_spans import CONTENT_CAP
from corral.tools.registry import Registry
from corral.tools.secret_arguments import storable
from corral.tracing import Attr

__all__ = ["MESSAGES_CAP", "record_input", "record_output"]

MESSAGES_CAP = 64_000
"""Characters of ``gen_ai.input.messages`` at most (the newest messages are kept)."""

Redact = Callable[[str], str]


def record_input(
    span: Span,
    instructions: Sequence[str],
    messages: Sequence[ModelMessage],
    registry: Registry,
    redact: Redact,
) -> None:
    text = _Text(redact)
    system: list[dict[str, Any]] = [_text(text(part)) for part in instructions]
    shown: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            if message.instructions:
                system.append({"type": "text", "content": text(message.instructions)})
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    system.append({"type": "text", "content": text(part.content)})
                elif isinstance(part, UserPromptPart):
                    shown.append({"role": "user", "parts": [_user(part, text)]})
                elif isinstance(part, BaseToolReturnPart):
                    response = text(part.model_response_str())
                    shown.append(
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "id": part.tool_call_id,
                                    "response": response,
                                }
                            ],
                        }
                    )
                elif isinstance(part, RetryPromptPart):
                    shown.append({"role": "user", "parts": [_text(text(part.model_response()))]})
        elif isinstance(message, ModelResponse):
            shown.append({"role": "assistant", "parts": _response_parts(message, registry, text)})
    if system:
        span.set_attribute(Attr.SYSTEM_INSTRUCTIONS, json.dumps(system, ensure_ascii=False))
    span.set_attribute(Attr.INPUT_MESSAGES, _newest(shown))


def record_output(span: Span, response: ModelResponse, registry: Registry, redact: Redact) -> None:
    message = {
        "role": "assistant",
        "parts": _response_parts(response, registry, _Text(redact)),
        "finish_reason": response.finish_reason or "stop",
    }
    span.set_attribute(Attr.OUTPUT_MESSAGES, json.dumps([message], ensure_ascii=False))


class _Text:
    def __init__(self, redact: Redact) -> None:
        self._redact = redact

    def __call__(self, value: str) -> str:
        return self._redact(value[:CONTENT_CAP])


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _user(part: UserPromptPart, text: _Text) -> dict[str, Any]:
    if isinstance(part.content, str):
        return _text(text(part.content))
    pieces = [item if isinstance(item, str) else "[attachment]" for item in part.content]
    return _text(text("\n".join(pieces)))


def _response_parts(
    response: ModelResponse, registry: Registry, text: _Text
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            parts.append(_text(text(part.content)))
        elif isinstance(part, ThinkingPart):
            parts.append({"type": "reasoning", "content": text(part.content)})
        elif isinstance(part, BaseToolCallPart):
            tool = registry.tools.get(part.tool_name)
            pointers = tool.spec.secret_arguments if tool is not None else ()
            arguments = storable(pointers, part.args_as_dict())
            parts.append(
                {
                    "type": "tool_call",
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "arguments": text(json.dumps(arguments, ensure_ascii=False, default=str)),
                }
            )
    return parts


def _newest(messages: list[dict[str, Any]]) -> str:
    kept: list[str] = []
    size = 2
    for message in reversed(messages):
        encoded = json.dumps(message, ensure_ascii=False)
        if kept and size + len(encoded) + 1 > MESSAGES_CAP:
            break
        kept.append(encoded)
        size += len(encoded) + 1
    return "[" + ",".join(reversed(kept)) + "]"
