"""Model strings: scripted models, registered fakes, real providers (never reached in tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel

from corral.errors import UsageError
from corral.runtime.models import ModelRegistry, parse_script, providers, script_model
from corral.settings import ModelEndpoint, load_settings


async def answer(script: dict[str, object], *messages: object) -> ModelResponse:
    model = script_model(parse_script(script), "script:test")
    return await model.request(list(messages), None, ModelRequestParameters())  # type: ignore[arg-type]


async def test_a_script_replays_turns_and_picks_alternatives() -> None:
    script = {
        "turns": [
            {"text": "calling", "tool_calls": [{"name": "echo", "args": {"text": "x"}}]},
            [
                {"when_result_contains": "denied", "text": "refused"},
                {"when_message_contains": "hurry", "text": "fast"},
                {"text": "plain"},
            ],
        ]
    }
    first = await answer(script, ModelRequest(parts=[UserPromptPart("go")]))
    assert isinstance(first.parts[1], ToolCallPart) and first.parts[1].args == {"text": "x"}
    asked = ModelResponse(parts=[TextPart("calling")])

    def after(result: str, said: str = "") -> list[object]:
        parts: list[object] = [ToolReturnPart("echo", result, tool_call_id="c")]
        if said:
            parts.append(UserPromptPart(said))
        return [ModelRequest(parts=[UserPromptPart("go")]), asked, ModelRequest(parts=parts)]  # type: ignore[list-item]

    assert (await answer(script, *after("approval denied"))).text == "refused"
    assert (await answer(script, *after("ok", "hurry up"))).text == "fast"
    assert (await answer(script, *after("ok"))).text == "plain"
    done = [ModelRequest(parts=[UserPromptPart("go")]), asked, asked, ModelRequest(parts=[])]
    assert (await answer(script, *done)).text == "Done."


async def test_scripts_can_cycle_or_repeat_and_say_when_nothing_matches() -> None:
    asked = ModelResponse(parts=[TextPart("x")])
    hello = ModelRequest(parts=[UserPromptPart("hi")])
    cycle = {"after_end": "cycle", "turns": [{"text": "a"}, {"text": "b"}]}
    assert (await answer(cycle, hello, asked, asked, hello)).text == "a"
    repeat = {"after_end": "repeat_last", "turns": [{"text": "a"}, {"text": "b"}]}
    assert (await answer(repeat, hello, asked, asked, asked, hello)).text == "b"
    strict = {"turns": [[{"when_result_contains": "never", "text": "no"}]]}
    assert (await answer(strict, hello)).text == "(script: no turn matches at position 0)"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "'turns' list"),
        ({"turns": ["text"]}, "turn at /turns/0 must be an object"),
        ({"turns": [{"txt": "typo"}]}, "unknown keys ['txt']"),
        ({"turns": [{"tool_calls": [{"args": {}}]}]}, "/turns/0/tool_calls/0 needs a string"),
        ({"turns": [], "after_end": "loop"}, "'after_end'"),
        ({"turns": [], "accepts": ["video"]}, "'accepts'"),
    ],
)
def test_script_mistakes_name_where_they_are(document: object, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_script(document)


def test_scripts_are_re_read_when_the_file_changes(tmp_path: Path) -> None:
    registry = ModelRegistry(load_settings(tmp_path))
    path = tmp_path / "s.json"
    path.write_text('{"turns": [], "accepts": ["image"]}')
    first = registry.resolve(f"script:{path}")
    assert first.media.images and registry.resolve(f"script:{path}") is first
    path.write_text('{"turns": [{"text": "new"}]}')
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = registry.resolve(f"script:{path}")
    assert second is not first and not second.media.images


def test_tests_never_reach_a_real_model(tmp_path: Path, _no_real_models: list[str]) -> None:
    registry = ModelRegistry(load_settings(tmp_path))
    with pytest.raises(RuntimeError, match="must not reach a real model"):
        registry.resolve("anthropic:claude-sonnet-5-5")
    assert _no_real_models == ["anthropic:claude-sonnet-5-5"]
    _no_real_models.clear()  # the guard worked; do not fail this test for it


def test_real_model_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "REAL_MODEL_GUARD", None)  # built here, never requested
    monkeypatch.setenv("VLLM_KEY", "secret-value")
    settings = load_settings(
        tmp_path,
        model_endpoints={
            "gpu": ModelEndpoint(
                base_url="http://gpu.invalid:8000/v1", api_key_env="VLLM_KEY", accepts=["image"]
            )
        },
    )
    model, media = providers.build_real_model("gpu:qwen3-32b", settings)
    assert isinstance(model, OpenAIChatModel) and model.model_name == "qwen3-32b"
    assert media.images and not media.audio
    with pytest.raises(UsageError, match="provider:model"):
        providers.build_real_model("gpt-5", settings)
    with pytest.raises(UsageError, match="cannot be used"):
        providers.build_real_model("nosuchvendor:model", settings)
