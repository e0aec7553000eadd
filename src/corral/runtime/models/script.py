"""The scripted model ``script:PATH``: replays model turns from a JSON file.

For tests and reproducible demos; built on pydantic-ai's ``FunctionModel``, so the loop
talks to it exactly as to a real model (streamed or not). The file::

    {
      "accepts": ["image"],            // media it reads as real content (default: none)
      "after_end": "finish",           // past the last turn: "finish" (say final_text),
                                       //   "repeat_last" or "cycle" (start over)
      "final_text": "Done.",
      "turns": [
        {"text": "Let me look.", "tool_calls": [{"name": "echo", "args": {"text": "hi"}}]},
        [                              // a list: alternatives, first match wins
          {"when_result_contains": "denied", "text": "I was not allowed to."},
          {"text": "It said hi."}
        ]
      ]
    }

The k-th model response of a conversation is ``turns[k]`` (k counts the model responses
already in the prompt, so a run resumed in another process continues where it stood).
A turn holds ``text`` and/or ``tool_calls`` (``name``, ``args``). Conditions, checked
against the last request the model received:

- ``when_result_contains``: text of a tool result in it contains the string;
- ``when_message_contains``: text of a user message, report or inbox message in it does.

A turn without conditions always matches; when no alternative matches, the model answers
``"(script: no turn matches at position k)"`` so a test sees the mismatch.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.usage import RequestUsage

from corral.errors import UsageError

__all__ = ["Script", "ScriptCall", "ScriptTurn", "load_script", "parse_script", "script_model"]

AfterEnd = Literal["finish", "repeat_last", "cycle"]


@dataclass(frozen=True, slots=True)
class ScriptCall:
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    text: str = ""
    tool_calls: tuple[ScriptCall, ...] = ()
    when_result_contains: str | None = None
    when_message_contains: str | None = None

    def matches(self, results: str, messages: str) -> bool:
        if self.when_result_contains is not None and self.when_result_contains not in results:
            return False
        return self.when_message_contains is None or self.when_message_contains in messages


@dataclass(frozen=True, slots=True)
class Script:
    positions: tuple[tuple[ScriptTurn, ...], ...]
    after_end: AfterEnd = "finish"
    final_text: str = "Done."
    accepts: frozenset[str] = frozenset()

    def alternatives(self, position: int) -> tuple[ScriptTurn, ...] | None:
        count = len(self.positions)
        if position < count:
            return self.positions[position]
        if self.after_end == "cycle" and count:
            return self.positions[position % count]
        if self.after_end == "repeat_last" and count:
            return self.positions[-1]
        return None


def _turn(raw: Any, at: str) -> ScriptTurn:
    if not isinstance(raw, dict):
        raise UsageError(f"script turn at {at} must be an object, not {type(raw).__name__}")
    unknown = set(raw) - {"text", "tool_calls", "when_result_contains", "when_message_contains"}
    if unknown:
        raise UsageError(f"script turn at {at} has unknown keys {sorted(unknown)}")
    calls = []
    for i, call in enumerate(raw.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise UsageError(f"script tool call at {at}/tool_calls/{i} needs a string 'name'")
        args = call.get("args", {})
        if not isinstance(args, dict):
            raise UsageError(f"script tool call at {at}/tool_calls/{i}: 'args' must be an object")
        calls.append(ScriptCall(call["name"], args))
    return ScriptTurn(
        text=str(raw.get("text", "")),
        tool_calls=tuple(calls),
        when_result_contains=raw.get("when_result_contains"),
        when_message_contains=raw.get("when_message_contains"),
    )


def parse_script(raw: Any) -> Script:
    """Check a script document and return it; errors name the JSON pointer."""
    if not isinstance(raw, dict) or not isinstance(raw.get("turns"), list):
        raise UsageError("a model script is an object with a 'turns' list")
    positions = []
    for k, item in enumerate(raw["turns"]):
        options = item if isinstance(item, list) else [item]
        positions.append(tuple(_turn(o, f"/turns/{k}") for o in options))
    after_end = raw.get("after_end", "finish")
    if after_end not in ("finish", "repeat_last", "cycle"):
        raise UsageError("script 'after_end' must be 'finish', 'repeat_last' or 'cycle'")
    accepts = frozenset(raw.get("accepts") or ())
    if not accepts <= {"image", "audio"}:
        raise UsageError("script 'accepts' may list 'image' and 'audio' only")
    return Script(
        positions=tuple(positions),
        after_end=cast(AfterEnd, after_end),
        final_text=str(raw.get("final_text", "Done.")),
        accepts=accepts,
    )


def load_script(path: str | Path) -> Script:
    file = Path(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"model script {str(file)!r} does not exist") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"model script {str(file)!r} is not valid JSON: {exc}") from None
    return parse_script(raw)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(_text_of(item) for item in content)
    return ""


def _last_request_texts(messages: Sequence[ModelMessage]) -> tuple[str, str]:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            results = [_text_of(p.content) for p in message.parts if isinstance(p, ToolReturnPart)]
            said = [_text_of(p.content) for p in message.parts if isinstance(p, UserPromptPart)]
            return "\n".join(results), "\n".join(said)
    return "", ""


def _choose(script: Script, messages: Sequence[ModelMessage]) -> tuple[int, ScriptTurn]:
    position = sum(1 for m in messages if isinstance(m, ModelResponse))
    options = script.alternatives(position)
    if options is None:
        return position, ScriptTurn(text=script.final_text)
    results, said = _last_request_texts(messages)
    for option in options:
        if option.matches(results, said):
            return position, option
    return position, ScriptTurn(text=f"(script: no turn matches at position {position})")


def _call_ids(position: int, turn: ScriptTurn) -> list[str]:
    salt = secrets.token_hex(3)
    return [f"call_{position}_{i}_{salt}" for i in range(len(turn.tool_calls))]


def script_model(script: Script, name: str) -> FunctionModel:
    """A pydantic-ai model answering from ``script``."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        position, turn = _choose(script, messages)
        parts: list[ModelResponsePart] = [TextPart(turn.text)] if turn.text else []
        for call, call_id in zip(turn.tool_calls, _call_ids(position, turn), strict=True):
            parts.append(ToolCallPart(call.name, call.args, tool_call_id=call_id))
        # A nominal usage keeps FunctionModel from estimating tokens over the whole history.
        usage = RequestUsage(input_tokens=len(messages), output_tokens=len(turn.text) // 4 + 1)
        return ModelResponse(parts=parts, usage=usage)

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        position, turn = _choose(script, messages)
        words = turn.text.split(" ")
        for i, word in enumerate(words):
            chunk = word if i == len(words) - 1 else word + " "
            if chunk:
                yield chunk
        ids = _call_ids(position, turn)
        for i, call in enumerate(turn.tool_calls):
            yield {i: DeltaToolCall(call.name, json.dumps(call.args), tool_call_id=ids[i])}
        if not turn.text and not turn.tool_calls:
            yield ""

    profile = ModelProfile(
        supports_image_input="image" in script.accepts,
        supports_audio_file_input="audio" in script.accepts,
    )
    return FunctionModel(respond, stream_function=stream, model_name=name, profile=profile)
