"""A connected MCP server's elicitation and sampling during a run, against the real stdio
server of tests/fixtures/mcp_features_server.py: its questions go to the person who started
the run (answered through the CLI in a real process), its sampling to the run's model when an
admin allowed it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.errors import AlreadyDecided
from corral.packages.core.mcp_servers import McpServers
from corral.platform import Platform
from corral.runtime.questions import Questions
from corral.server.app import create_app
from tests.conftest import DEMO
from tests.server.loopback import serving


def script(tmp_path: Path, *turns: object) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


async def connect(platform: Platform, command: list[str], **fields: str) -> None:
    item = {"kind": "mcp", "name": "feat", "command": command, "fields": fields}
    added = await platform.call_tool("connect", {"add": [item]})
    assert not added.is_error, added.text


async def cli(data_dir: Path, *args: str) -> tuple[int, str]:
    env = {
        **os.environ,
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PACKAGE_PATH": str(DEMO),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *["-m", "corral", *args],
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode(errors="replace")


async def asked_question(platform: Platform, conversation_id: str, turn: asyncio.Task[Any]) -> str:
    """The id of the question the call's live output names (the turn must not end first)."""
    async with platform.runtime.events.subscribe(conversation_id) as events:
        async for event in events:
            assert not turn.done(), turn.result()
            said = str(event.get("text", ""))
            if event["type"] == "output" and "corral questions answer" in said:
                return said.split("(")[1].split(")")[0]
    raise AssertionError("unreachable")


async def tool_results(platform: Platform, conversation_id: str) -> list[str]:
    rows = await platform.rows(conversation_id)
    return [json.dumps(r.data) for r in rows if r.kind == "tool_result"]


async def test_a_servers_question_is_answered_by_the_person_through_the_cli(
    platform: Platform, features_command: list[str], data_dir: Path, tmp_path: Path
) -> None:
    await connect(platform, features_command)
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "feat_ask", "args": {}}]},
        {"text": "Thanks."},
    )
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    turn = asyncio.create_task(
        platform.chat("who am I?", conversation_id=conversation.id, model=model)
    )
    async with asyncio.timeout(120):
        question = await asked_question(platform, conversation.id, turn)
        asked = await platform.services.require(Questions).get(question)
        texts = [q.question for q in asked.questions]
        assert "'feat' asks: Your name?" in texts[0] and asked.questions[0].options[:1] == (
            "accept",
        )
        assert texts[1].startswith("Name (A name.)")
        assert "optional" in texts[2]
        # The person's inbox lists it with the rest of what waits for them.
        code, listed = await cli(data_dir, "inbox", "--json")
        assert code == 0, listed
        (waiting,) = json.loads(listed)
        assert (waiting["id"], waiting["kind"]) == (question, "question")
        assert "'feat' asks: Your name?" in waiting["summary"]
        # An answer that breaks the requested schema is refused, saying what is wrong.
        code, said = await cli(data_dir, "questions", "answer", question, "accept", "ana", "old")
        assert code != 0 and "'old' is not a whole number" in said, said
        code, said = await cli(data_dir, "questions", "answer", question, "1", "ana", "41")
        assert code == 0, said
        await turn
        # A second answer, from another surface, is told which came first.
        with pytest.raises(AlreadyDecided, match=r"already decided by .* from the terminal"):
            await platform.services.require(Questions).answer(question, ["decline"], surface="web")
    (result,) = await tool_results(platform, conversation.id)
    assert "accept name=ana age=41" in result, result
    answered = await platform.services.require(Questions).get(question)
    assert answered.status == "answered" and answered.answered_by == "u_owner"


async def test_a_decline_over_http_reaches_the_server_and_a_link_is_shown_only_to_the_person(
    platform: Platform, features_command: list[str], data_dir: Path, tmp_path: Path
) -> None:
    await connect(platform, features_command)
    token = (await platform.identity.create_token("owner")).token
    questions = platform.services.require(Questions)
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "feat_ask", "args": {}}]},
        {"tool_calls": [{"name": "feat_visit", "args": {}}]},
        {"text": "Done."},
    )
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    turn = asyncio.create_task(platform.chat("go", conversation_id=conversation.id, model=model))
    async with (
        asyncio.timeout(120),
        serving(create_app(platform)) as base,
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api,
    ):
        first = await asked_question(platform, conversation.id, turn)
        broken = await api.post(f"/questions/{first}/answer", json={"answers": ["1", "-", "-"]})
        assert broken.status_code == 400 and "is required when you accept" in broken.text
        # A lone decline needs no other answers.
        declined = await api.post(f"/questions/{first}/answer", json={"answers": ["decline"]})
        assert declined.status_code == 200, declined.text
        second = await asked_question(platform, conversation.id, turn)
        # The person sees the link in their questions and says they opened it, from the CLI.
        code, listed = await cli(data_dir, "questions", "list", "--json")
        assert code == 0, listed
        (link,) = [q for q in json.loads(listed) if q["id"] == second]
        assert "https://example.test/sign-in" in link["questions"][0]["question"]
        code, said = await cli(data_dir, "questions", "answer", second, "1")
        assert code == 0, said
        await turn
    assert (await questions.get(second)).answered_by == "u_owner"
    declined, visited = await tool_results(platform, conversation.id)
    assert '"decline"' in declined, declined
    assert "visit accept" in visited, visited
    rows = await platform.rows(conversation.id)
    assert not any("example.test" in json.dumps(r.data) for r in rows)


async def test_an_unanswered_question_expires_as_a_decline(
    platform: Platform, features_command: list[str], tmp_path: Path
) -> None:
    await connect(platform, features_command)
    feat = platform.services.require(McpServers).connection("feat")
    assert feat is not None
    feat._call_timeout = 4.0  # the person has 3.6 s of it
    model = script(tmp_path, {"tool_calls": [{"name": "feat_ask", "args": {}}]}, {"text": "Ok."})
    async with asyncio.timeout(60):
        ended = await platform.chat("ask me", model=model, profile="auto")
    (said,) = await tool_results(platform, ended.conversation_id)
    assert '"decline"' in said, said
    (expired,) = await platform.services.require(Questions).list_questions(status=None)
    assert (expired.status, expired.note) == ("closed", "expired: no answer in time")
    decision = await platform.decisions.get(expired.id)
    assert (decision.status, decision.note) == ("expired", "expired: no answer in time")
    # Should the process die while it waits, the sweep ends it at the same time.
    assert decision.expires_at is not None
    assert decision.expires_at - decision.created_at < timedelta(seconds=4)


async def test_stopping_the_run_closes_the_servers_open_question(
    platform: Platform, features_command: list[str], tmp_path: Path
) -> None:
    await connect(platform, features_command)
    questions = platform.services.require(Questions)
    model = script(tmp_path, {"tool_calls": [{"name": "feat_ask", "args": {}}]}, {"text": "Ok."})
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    turn = asyncio.create_task(platform.chat("go", conversation_id=conversation.id, model=model))
    async with asyncio.timeout(120):
        asked = await questions.get(await asked_question(platform, conversation.id, turn))
        stopped = await platform.runtime.stop(asked.run_id)
        await turn
    assert stopped.status == "stopped"
    assert await questions.list_questions(status="open") == []
    assert await platform.decisions.list(status="pending") == []
    (said,) = await tool_results(platform, conversation.id)
    assert "was cancelled before it finished" in said, said


async def test_sampling_is_refused_unless_allowed_and_then_uses_the_runs_model(
    platform: Platform, features_command: list[str], tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        [
            {"when_message_contains": "Say one word for the features server", "text": "pear"},
            {"tool_calls": [{"name": "feat_sample", "args": {}}]},
        ],
        {"text": "Done."},
    )
    await connect(platform, features_command)
    refused = await platform.chat("sample", model=model, profile="auto")
    (said,) = await tool_results(platform, refused.conversation_id)
    assert "refused:" in said and "an admin allows it" in said, said
    removed = await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "feat"}]})
    assert not removed.is_error, removed.text

    await connect(platform, features_command, sampling="true")
    allowed = await platform.chat("sample", model=model, profile="auto")
    (said,) = await tool_results(platform, allowed.conversation_id)
    assert "sampled by" in said and ": pear" in said, said
    # The run's model use counts towards the run's limits like its own turns.
    (spent,) = [
        u for u in await platform.logs.records(kind="usage") if u.data["source"] == "mcp.sampling"
    ]
    assert spent.run_id is not None and spent.data["conversation_id"] == allowed.conversation_id


async def test_a_sampling_requests_tokens_count_against_the_runs_token_budget(
    platform: Platform, features_command: list[str], tmp_path: Path
) -> None:
    # The first turn spends 2 tokens, the sampling request 3: past the limit only with both.
    await platform.admin.set_live("budgets", {"agents": {"default": {"total_tokens": 4}}})
    model = script(
        tmp_path,
        [
            {"when_message_contains": "Say one word for the features server", "text": "pear"},
            {"tool_calls": [{"name": "feat_sample", "args": {}}]},
        ],
        {"text": "Wrapped up."},
    )
    await connect(platform, features_command, sampling="true")
    turn = await platform.chat("sample", model=model, profile="auto")
    (said,) = await tool_results(platform, turn.conversation_id)
    assert ": pear" in said, said
    (sampled,) = [
        u for u in await platform.logs.records(kind="usage") if u.data["source"] == "mcp.sampling"
    ]
    sampling = sampled.data["input_tokens"] + sampled.data["output_tokens"]
    assert sampling == 3
    budget = await platform.runtime.budgets.find(turn.run_id)
    assert budget is not None
    assert (
        budget.spent.requests == 3
    )  # two turns of the run (the second its wrap-up) and the sampling
    run = await platform.runtime.runs.get(turn.run_id)
    assert (run.status, run.reason) == ("partial", "budget_exhausted"), run.detail
    assert "the limit of 4 total tokens (spent 5)" in run.detail, run.detail  # 2 + 3
