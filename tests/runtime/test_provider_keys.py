"""Model providers read their keys from the credential store (the environment is the
fallback): a run's model is built with the run's user's stored key, the key goes only to the
provider, and never into a row or a result."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

import corral
from corral.runtime.models import providers
from corral.runtime.models.providers import build_real_model, credential_name
from corral.settings import ModelEndpoint, Settings
from tests.conftest import DEMO

KEY = "sk-stored-provider-key-0123456789"


class Recorder(BaseHTTPRequestHandler):
    seen: list[str | None]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(self.headers.get("Authorization"))
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hello"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str | None]]]:
    seen: list[str | None] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Recorder,), {"seen": seen}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


async def test_a_run_uses_the_users_stored_key_over_the_environment(
    data_dir: Path,
    recorder: tuple[str, list[str | None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_url, seen = recorder
    monkeypatch.setattr(providers, "REAL_MODEL_GUARD", None)
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("LOCAL_KEY", "env-fallback-key")
    endpoint = ModelEndpoint(base_url=base_url, api_key_env="LOCAL_KEY")
    async with corral.open(
        data_dir, package_paths=[DEMO], model_endpoints={"local": endpoint}
    ) as platform:
        first = await platform.chat("hi", model="local:m")
        assert first.status == "finished", first
        owner = await platform.caller()
        await platform.credentials.set("local", KEY, user_id=owner.user_id)
        second = await platform.chat("hi again", model="local:m")
        assert second.text == "hello"
        rows = json.dumps([r.data for r in second.rows], default=str)
    assert seen == ["Bearer env-fallback-key", f"Bearer {KEY}"]
    assert KEY not in rows


def test_keyed_providers_are_built_with_the_stored_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "REAL_MODEL_GUARD", None)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(data_dir=Path("/nonexistent-corral-test"))
    model, _ = build_real_model("openai:gpt-test", settings, key=KEY)
    assert model.client.api_key == KEY  # type: ignore[attr-defined]
    anthropic, _ = build_real_model("anthropic:claude-test", settings, key=KEY)
    assert anthropic.client.api_key == KEY  # type: ignore[attr-defined]
    assert credential_name("gemini:g-1") == "google" and credential_name("local:m") == "local"
