"""A real provider path end to end, against a fake OpenAI-compatible server on loopback.

Every other test drives the loop with FunctionModel; this one checks what an actual
provider adapter sends: the system part, the tools' full schemas, tool results with the
image as real content. The server is local and fake; no real model is reached.
"""

from __future__ import annotations

import base64
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
from corral.runtime.prompt.system import RULES
from corral.settings import ModelEndpoint
from tests.conftest import DEMO
from tests.fixtures.packages.demo.handlers import PNG

PICTURE = {"id": "call_1", "type": "function", "function": {"name": "picture", "arguments": "{}"}}
REPLIES: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [PICTURE]},
    {"role": "assistant", "content": "I see a dot."},
]


class FakeOpenAI(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        message = REPLIES[min(len(self.bodies), len(REPLIES)) - 1]
        reply = {
            "id": f"chatcmpl-{len(self.bodies)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
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
def fake_openai() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (FakeOpenAI,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


async def test_an_openai_compatible_endpoint_gets_system_tools_and_the_image(
    data_dir: Path,
    fake_openai: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_url, bodies = fake_openai
    # This test's "real" model is the fake server above: let the loop build and call it.
    monkeypatch.setattr(providers, "REAL_MODEL_GUARD", None)
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    endpoint = ModelEndpoint(base_url=base_url, accepts=["image"])
    async with corral.open(
        data_dir, package_paths=[DEMO], model_endpoints={"local": endpoint}
    ) as platform:
        await platform.admin.ensure_agent("default", instructions="Describe pictures.")
        turn = await platform.chat("what is in the picture?", model="local:vision-1")
    assert turn.status == "finished" and turn.text == "I see a dot."
    first, second = bodies
    assert first["model"] == "vision-1"
    system = "\n".join(m["content"] for m in first["messages"] if m["role"] == "system")
    assert first["messages"][0]["role"] == "system"
    assert "Describe pictures." in system and RULES in system
    assert "Steps: 0 of 50 used" in system  # the dynamic part, after the cacheable one
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"echo", "picture", "write_note"} <= set(tools)
    assert tools["echo"]["parameters"]["properties"]["text"]["description"] == "Text to return."
    sent = json.dumps(second["messages"])
    assert base64.b64encode(PNG).decode() in sent  # the image went as real content
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["tool_call_id"] == "call_1"
