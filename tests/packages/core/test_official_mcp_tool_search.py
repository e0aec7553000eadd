"""tool_search with the six official reference MCP servers connected: in auto mode the tool
list the model gets shrinks to the native tools and a list of names, and a scripted run finds the
time server's tool, gets it in full on its next step and calls it through the pipeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from corral.platform import Platform
from corral.runtime.compaction.tokens import count_tokens, tokenizer_name
from corral.runtime.prompt import Prompt, PromptRequest
from corral.runtime.tool_search.context_windows import FALLBACK_CONTEXT_TOKENS
from tests.packages.core.official_mcp_servers import node_server, python_server
from tests.packages.core.test_official_mcp_servers import connect


@dataclass(frozen=True, slots=True)
class Built:
    system: str
    definitions: dict[str, int]
    """Tokens of each tool definition sent, by tool."""
    listing: int
    """Tokens of the deferred tools' list in the system prompt."""

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(self.definitions)

    @property
    def tool_tokens(self) -> int:
        return sum(self.definitions.values()) + self.listing


def _definition_tokens(prompt: Prompt) -> dict[str, int]:
    return {
        t.name: count_tokens(
            json.dumps(
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters_json_schema,
                },
                separators=(",", ":"),
            )
        )
        for t in prompt.parameters.function_tools
    }


def _listing(system: str) -> str:
    start, end = system.find("<deferred_tools>"), system.find("</deferred_tools>")
    return system[start : end + len("</deferred_tools>")] if start >= 0 else ""


@pytest.fixture
def builds(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> list[Built]:
    seen: list[Built] = []
    prompt_builder = platform.runtime.prompt
    build = prompt_builder.build

    async def recording(request: PromptRequest) -> Prompt:
        prompt = await build(request)
        listing = count_tokens(_listing(prompt.system))
        seen.append(Built(prompt.system, _definition_tokens(prompt), listing))
        return prompt

    monkeypatch.setattr(prompt_builder, "build", recording)
    return seen


async def connect_all_six(platform: Platform, data_dir: Path) -> set[str]:
    graph = data_dir / "mcp" / "memory" / "memory.jsonl"
    servers = {
        "time": python_server("mcp-server-time"),
        "git": python_server("mcp-server-git"),
        "fetch": python_server("mcp-server-fetch"),
        "fs": node_server("server-filesystem"),
        "memory": ["/usr/bin/env", f"MEMORY_FILE_PATH={graph}", *node_server("server-memory")],
        "think": node_server("server-sequential-thinking"),
    }
    offered: set[str] = set()
    for name, command in servers.items():
        offered |= set((await connect(platform, name, command))["tools"])
    return offered


def script(tmp_path: Path, *turns: object) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


async def test_six_servers_tool_list_shrinks_and_a_deferred_time_tool_is_found_and_called(
    platform: Platform, data_dir: Path, tmp_path: Path, builds: list[Built]
) -> None:
    offered = await connect_all_six(platform, data_dir)
    assert len(offered) >= 30, sorted(offered)
    model = script(
        tmp_path,
        {"text": "plain"},
        {"tool_calls": [{"name": "tool_search", "args": {"query": "current time timezone"}}]},
        {"tool_calls": [{"name": "time_get_current_time", "args": {"timezone": "UTC"}}]},
        {"text": "done"},
    )
    await platform.admin.set_live("tool_search", "off")
    plain = await platform.chat("what time is it?", model=model)
    without = builds[-1]
    assert offered <= set(without.tools)

    # auto, the default, defers them: the script model's context is the fallback size.
    assert sum(without.definitions.values()) > FALLBACK_CONTEXT_TOKENS // 10, without
    await platform.admin.reset_live("tool_search")
    count = len(builds)
    turn = await platform.chat("what time is it?", conversation_id=plain.conversation_id)
    deferred, loaded = builds[count], builds[count + 1]
    assert not offered & set(deferred.tools) and "tool_search" in deferred.tools
    assert all(f"\n{name}\n" in deferred.system for name in offered)
    assert "time_get_current_time" in loaded.tools
    # Found and loaded, the tool asks for approval exactly as it does without tool search.
    assert turn.status == "parked", turn.detail
    assert [w.tool for w in turn.waiting] == ["time_get_current_time"]
    await platform.decide_approval(turn.approvals[0], "approve")
    assert (await platform.runtime.wait_run(turn.run_id)).status == "finished"
    rows = (await platform.runtime.result(turn.run_id)).rows
    results = [r for r in rows if r.kind == "tool_result"]
    assert [r.data["tool"] for r in results] == ["tool_search", "time_get_current_time"]
    assert "time_get_current_time" in results[0].data["result"]["data"]["loaded"]
    answer = results[1].data["result"]
    assert not answer["is_error"], answer
    assert json.loads(answer["content"][0]["text"])["timezone"] == "UTC"

    mcp = sum(tokens for name, tokens in without.definitions.items() if name in offered)
    native = without.tool_tokens - mcp
    print(
        f"\ntool list ({tokenizer_name()}): without deferral {without.tool_tokens} tokens "
        f"({len(without.tools)} tools: {len(offered)} from the six servers = {mcp}, the rest "
        f"{native}); with deferral {deferred.tool_tokens} tokens ({len(deferred.tools)} tools "
        f"in full = {deferred.tool_tokens - deferred.listing}, {len(offered)} server tools and "
        f"{len(without.tools) - len(offered) - len(deferred.tools) + 1} demo tools by name = "
        f"{deferred.listing})"
    )
    assert deferred.listing * 5 < mcp
    assert deferred.tool_tokens < without.tool_tokens - mcp * 3 // 4
