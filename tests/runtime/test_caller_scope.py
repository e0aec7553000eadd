"""A chat turn resolves its caller, loads its agent and resolves its model once, at the
entry point, and its run uses that scope instead of resolving each again."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from typing import Any

import httpx
import pytest

from corral.platform import Platform
from corral.runtime import agents
from corral.runtime.caller_scope import CallerScope, ScopeHandoff
from corral.server import create_app
from tests.runtime.conftest import ScriptWriter


@pytest.fixture
def counted(rt_platform: Platform, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often caller resolution, agent loading and model resolution run."""
    counts: Counter[str] = Counter()
    kernel, models = rt_platform.kernel, rt_platform.runtime.models
    original_caller, original_resolve = kernel.caller, models.resolve_for
    original_load = agents.load_agent

    async def caller(*args: Any, **kwargs: Any) -> Any:
        counts["caller"] += 1
        return await original_caller(*args, **kwargs)

    async def resolve_for(*args: Any, **kwargs: Any) -> Any:
        counts["model"] += 1
        return await original_resolve(*args, **kwargs)

    async def load_agent(*args: Any, **kwargs: Any) -> Any:
        counts["agent"] += 1
        return await original_load(*args, **kwargs)

    monkeypatch.setattr(kernel, "caller", caller)
    monkeypatch.setattr(models, "resolve_for", resolve_for)
    for name, module in list(sys.modules.items()):
        if name.startswith("corral.") and getattr(module, "load_agent", None) is original_load:
            monkeypatch.setattr(module, "load_agent", load_agent)
    return counts


async def test_a_chat_turn_resolves_its_scope_once(
    rt_platform: Platform, write_script: ScriptWriter, counted: Counter[str]
) -> None:
    model = write_script({"text": "first"}, {"text": "second"})
    first = await rt_platform.chat("hello", model=model)
    assert first.text == "first"
    assert counted == {"caller": 1, "agent": 1, "model": 1}
    counted.clear()
    second = await rt_platform.chat("again", conversation_id=first.conversation_id)
    assert second.text == "second"
    assert counted == {"caller": 1, "agent": 1, "model": 1}


async def test_an_http_chat_turn_resolves_its_scope_once(
    rt_platform: Platform, write_script: ScriptWriter, counted: Counter[str]
) -> None:
    """The token dependency resolves the caller; the turn uses it instead of resolving again."""
    model = write_script({"text": "first"}, {"text": "second"})
    token = await rt_platform.identity.create_token("owner")
    transport = httpx.ASGITransport(app=create_app(rt_platform))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as http:
        counted.clear()
        first = (await http.post("/chat", json={"message": "hello", "model": model})).json()
        assert first["text"] == "first"
        assert counted == {"caller": 1, "agent": 1, "model": 1}
        counted.clear()
        path = f"/conversations/{first['conversation_id']}/messages"
        second = (await http.post(path, json={"message": "again"})).json()
        assert second["text"] == "second"
        assert counted == {"caller": 1, "agent": 1, "model": 1}


async def test_only_the_run_the_scope_was_resolved_for_takes_it_once(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    runtime = rt_platform.runtime
    turn = await rt_platform.chat("hello", model=write_script({"text": "done"}))
    run = await runtime.runs.get(turn.run_id)
    caller = await rt_platform.kernel.caller(None)
    agent = await agents.load_agent(rt_platform.kernel.sessions, run.agent)
    model = runtime.models.resolve(run.model)
    scope = CallerScope(caller=caller, agent=agent, model=model, profile=run.profile)
    handoff = ScopeHandoff()
    handoff.offer(run.conversation_id, scope)
    assert handoff.take(replace(run, steps=1)) is None  # resumed: resolves afresh
    handoff.offer(run.conversation_id, scope)
    assert handoff.take(replace(run, user_id="someone-else")) is None
    handoff.offer(run.conversation_id, scope)
    assert handoff.take(replace(run, steps=0)) is scope
    assert handoff.take(replace(run, steps=0)) is None  # taken once
