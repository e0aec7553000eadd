"""A scripted model that also records what it was shown: the prompt of every request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from corral.runtime.models.script import parse_script, script_model
from corral.runtime.runtime import Runtime


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the model received it."""

    messages: list[ModelMessage]
    system: str
    tools: list[str]

    def texts(self) -> list[str]:
        """Every text the history holds, in order: what people said, results, answers."""
        out: list[str] = []
        for message in self.messages:
            for part in message.parts:
                if isinstance(part, UserPromptPart | ToolReturnPart):
                    content = part.content
                    out.append(content if isinstance(content, str) else str(content))
                elif isinstance(part, TextPart):
                    out.append(part.content)
        return out

    def result_of(self, call_id: str) -> str:
        for message in self.messages:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, ToolReturnPart) and part.tool_call_id == call_id:
                        return str(part.content)
        raise AssertionError(f"no result for {call_id!r} in the prompt")

    def call_ids(self, tool: str) -> list[str]:
        return [
            part.tool_call_id
            for message in self.messages
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart) and part.tool_name == tool
        ]


class Recorder:
    """Registers ``name`` as a model answering from a script and recording each prompt."""

    def __init__(self, rt: Runtime, name: str, *turns: Any, **options: Any) -> None:
        self.name = name
        self.seen: list[Seen] = []
        inner = script_model(parse_script({"turns": list(turns), **options}), name)

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.seen.append(
                Seen(
                    messages=list(messages),
                    system=info.instructions or "",
                    tools=[t.name for t in info.function_tools],
                )
            )
            return inner.function(messages, info)  # type: ignore[no-any-return,misc]

        rt.models.register(name, FunctionModel(respond, model_name=name))

    @property
    def last(self) -> Seen:
        return self.seen[-1]


class Player:
    """Registers ``name`` as a model playing ``turns`` in order, recording each prompt.

    The k-th response of a conversation is ``turns[k]`` (``{"text", "tool_calls"}``), past
    the end ``final``; its calls get the ids ``call_{k}_{i}``, so a later turn can name an
    earlier call's tool_use_id in its arguments.
    """

    def __init__(self, rt: Runtime, name: str, *turns: dict[str, Any], final: str = "Done."):
        self.name = name
        self.seen: list[Seen] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.seen.append(
                Seen(
                    messages=list(messages),
                    system=info.instructions or "",
                    tools=[t.name for t in info.function_tools],
                )
            )
            position = sum(1 for m in messages if isinstance(m, ModelResponse))
            turn = turns[position] if position < len(turns) else {"text": final}
            parts: list[Any] = [TextPart(turn["text"])] if turn.get("text") else []
            for i, made in enumerate(turn.get("tool_calls") or ()):
                parts.append(
                    ToolCallPart(made["name"], made["args"], tool_call_id=f"call_{position}_{i}")
                )
            return ModelResponse(parts=parts)

        rt.models.register(name, FunctionModel(respond, model_name=name))
