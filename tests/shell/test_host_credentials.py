"""Staged secrets on the host plane: a skill's declared credential and the run's ticket reach
a broker command under their names only, redacted from everything the platform keeps, and
the broker refuses what a request may not stage."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import corral
from corral.connect import CredentialStore
from corral.platform import Platform
from corral.runtime.skills import Skills, import_bundle
from corral.shell.host.broker import BrokerConfig, HostBroker
from corral.shell.host.protocol import VERSION, encode, read_message
from corral.shell.service import ShellService
from tests.runtime.conftest import call
from tests.runtime.skills.conftest import write_bundle

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "wk-" + "H0stS3cr3t" * 3
PLATFORM_SECRET = "pk-" + "N0tF0rTh3H0st" * 3
PROBE = (
    'echo "wiki=${#WIKI_TOKEN} demo=${#DEMO_API_KEY} ticket=${#CORRAL_TICKET} session=$SESSION_ID"'
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HostBroker]:
    base = tmp_path_factory.mktemp("hostcred")
    root = base / "hostroot"
    root.mkdir()
    host = HostBroker(
        BrokerConfig(
            socket=base / "broker.sock",
            allow=frozenset({"echo", "cat"}),
            roots=(str(root),),
            max_timeout=30,
        )
    )
    async with await host.serve():
        yield host
        await host.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hosted(
    tmp_path_factory: pytest.TempPathFactory, broker: HostBroker
) -> AsyncIterator[Platform]:
    base = tmp_path_factory.mktemp("hostcred-platform")
    write_bundle(
        base / "downloads",
        "wiki-notes",
        credentials="credentials:\n  - name: wiki\n    env: WIKI_TOKEN\n",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEMO_API_KEY", PLATFORM_SECRET)  # the broker's own environment too
        async with corral.open(base / "data", host_broker_socket=broker.config.socket) as platform:
            await platform.admin.add_source("machine", broker.config.roots[0], connector="host")
            await platform.admin.grant_source(
                "machine", principal_kind="role", principal="owner", rights="rwx"
            )
            skills = platform.services.require(Skills)
            import_bundle(base / "downloads" / "wiki-notes", skills.catalog.drive_folder)
            await skills.trust("wiki-notes", user_id="", project=True)
            store = platform.services.require(CredentialStore)
            await store.set("wiki", SECRET, user_id="u_owner")
            yield platform


def script(platform: Platform, *turns: Any) -> str:
    folder = platform.settings.data_dir.parent / "scripts"
    folder.mkdir(exist_ok=True)
    path = folder / f"script-{len(list(folder.iterdir()))}.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_a_declared_credential_and_the_ticket_reach_a_host_command_unseen(
    hosted: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    rt = hosted.runtime
    host = {"cwd": "machine://"}
    model = script(
        hosted,
        {"tool_calls": [call("execute", command=PROBE, **host)]},
        {"tool_calls": [call("execute", action="skill", skill="wiki-notes")]},
        {"tool_calls": [call("execute", command=PROBE, **host)]},
        {"tool_calls": [call("execute", command='echo "leak:$WIKI_TOKEN"', **host)]},
        {"text": "Probed."},
    )
    conversation = await rt.start_conversation(model=model)
    async with rt.events.subscribe(conversation.id) as events:
        turn = await hosted.chat("publish", conversation_id=conversation.id, profile="auto")
        frames = []
        while (event := events.get_nowait()) is not None:
            frames.append(event)
    assert turn.status == "finished", turn
    rows = await hosted.rows(turn.conversation_id)
    before, _, probed, leaked = [r.data["result"] for r in rows if r.kind == "tool_result"]
    assert probed["data"]["plane"] == "host", text(probed)
    # Before activation only the ticket is staged; after it, the declared name as well.
    assert "wiki=0 demo=0 ticket=" in text(before) and "ticket=0" not in text(before)
    assert f"wiki={len(SECRET)} demo=0 ticket=" in text(probed)
    assert "ticket=0" not in text(probed)
    assert f"session={turn.conversation_id}" in text(probed)
    assert "leak:[redacted]" in text(leaked) and SECRET not in text(leaked)
    live = json.dumps([f for f in frames if f["type"] == "output"])
    assert "leak:" in live and SECRET not in live
    shown = json.dumps([r.data for r in rows], default=str)
    assert SECRET not in shown and PLATFORM_SECRET not in shown
    assert SECRET not in caplog.text
    data_dir = hosted.settings.data_dir
    stored = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.name == "corral.db" for p in stored)
    assert [p for p in stored if SECRET.encode() in p.read_bytes()] == []


async def ask(broker: HostBroker, **fields: Any) -> list[dict[str, Any]]:
    """Send one raw run request (as a platform that breaks the rules would) and collect
    every answer."""
    reader, writer = await asyncio.open_unix_connection(str(broker.config.socket))
    request = {"v": VERSION, "op": "run", "cwd": broker.config.roots[0], **fields}
    writer.write(encode(request))
    await writer.drain()
    answers = []
    while (message := await read_message(reader)) is not None:
        answers.append(message)
    writer.close()
    return answers


async def test_the_broker_redacts_a_staged_value_it_sends(broker: HostBroker) -> None:
    answers = await ask(
        broker,
        command='echo "a:$TOKEN_A" >&2; echo "b:${#TOKEN_A}"',
        declared=["TOKEN_A"],
        secrets={"TOKEN_A": SECRET},
    )
    sent = json.dumps(answers)
    assert answers[-1]["type"] == "exit" and SECRET not in sent
    # A tail that could begin a secret waits for the next chunk: join a stream's pieces.
    streams = {
        name: "".join(a["text"] for a in answers if a.get("stream") == name)
        for name in ("stdout", "stderr")
    }
    assert streams == {"stderr": "a:[redacted]\n", "stdout": f"b:{len(SECRET)}\n"}


@pytest.mark.parametrize(
    ("fields", "rule", "word"),
    [
        # A secret the request did not declare, and one declared under another name.
        ({"secrets": {"TOKEN_A": SECRET}}, "staged", "TOKEN_A"),
        ({"declared": ["TOKEN_B"], "secrets": {"TOKEN_A": SECRET}}, "staged", "TOKEN_A"),
        # Declared names that would change what runs or who it runs as.
        ({"declared": ["PATH"], "secrets": {"PATH": "/tmp"}}, "staged", "PATH"),
        ({"declared": ["HOME"], "secrets": {"HOME": "/tmp"}}, "staged", "HOME"),
        ({"declared": ["LD_PRELOAD"], "secrets": {"LD_PRELOAD": "/x.so"}}, "staged", "LD_PRELOAD"),
        ({"declared": ["BASH_ENV"], "secrets": {"BASH_ENV": "/x"}}, "staged", "BASH_ENV"),
        (
            {"declared": ["GIT_SSH_COMMAND"], "secrets": {"GIT_SSH_COMMAND": "sh"}},
            "staged",
            "GIT_SSH_COMMAND",
        ),
        ({"declared": ["BAD-NAME"], "secrets": {"BAD-NAME": "x"}}, "staged", "BAD-NAME"),
        ({"declared": ["NUL"], "secrets": {"NUL": "a\x00b"}}, "staged", "NUL"),
        # Plain variables go through the same names rule; so does the call's env.
        ({"variables": {"PATH": "/tmp"}}, "staged", "PATH"),
        ({"variables": {"BASH_FUNC_echo%%": "() { :; }"}}, "staged", "BASH_FUNC_echo%%"),
        ({"env": {"PATH": "/tmp/bin:/usr/bin"}}, "env", "PATH"),
        ({"env": {"API_TOKEN": SECRET}}, "env", "API_TOKEN"),
        # Wrong shapes.
        ({"declared": "TOKEN_A", "secrets": {"TOKEN_A": SECRET}}, "bad_request", None),
        ({"declared": ["TOKEN_A"], "secrets": {"TOKEN_A": 5}}, "bad_request", None),
        ({"secrets": ["TOKEN_A"]}, "bad_request", None),
    ],
)
async def test_the_broker_refuses_what_may_not_be_staged(
    broker: HostBroker,
    caplog: pytest.LogCaptureFixture,
    fields: dict[str, Any],
    rule: str,
    word: str | None,
) -> None:
    caplog.set_level(logging.DEBUG)
    answers = await ask(broker, command="echo ran", **fields)
    assert [a["type"] for a in answers] == ["refused"], answers
    assert (answers[0]["rule"], answers[0]["word"]) == (rule, word)
    assert SECRET not in json.dumps(answers) and SECRET not in caplog.text


async def test_a_broker_that_predates_staging_is_named_and_cannot_leak(
    hosted: Platform, broker: HostBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def old_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answers as the broker did before staging: no ``staged`` in ``started``; and it
        echoes every value it was sent, so only the platform's own redaction stands."""
        request = await read_message(reader)
        assert request is not None
        echoed = " ".join(request.get("secrets", {}).values())
        roots = list(broker.config.roots)
        for message in (
            {"type": "started", "confinement": "host-broker:unconfined", "roots": roots,
             "timeout": 5},
            {"type": "output", "stream": "stdout", "text": f"got {echoed}\n"},
            {"type": "exit", "status": "exited", "exit_code": 0, "duration": 0.0, "trimmed": 0},
        ):  # fmt: skip
            writer.write(encode(message))
        await writer.drain()
        writer.close()

    old = tmp_path / "old.sock"
    server = await asyncio.start_unix_server(old_broker, path=str(old))
    client = hosted.services.require(ShellService).broker
    assert client is not None
    monkeypatch.setattr(client, "socket_path", old)
    model = script(
        hosted,
        {"tool_calls": [call("execute", action="skill", skill="wiki-notes")]},
        {"tool_calls": [call("execute", command="echo probe", cwd="machine://")]},
        {"text": "Done."},
    )
    async with server:
        conversation = await hosted.runtime.start_conversation(model=model)
        turn = await hosted.chat("go", conversation_id=conversation.id, profile="auto")
    assert turn.status == "finished", turn
    rows = await hosted.rows(turn.conversation_id)
    _, probed = [r.data["result"] for r in rows if r.kind == "tool_result"]
    assert "got [redacted]" in text(probed) and SECRET not in json.dumps(probed)
    assert "did not confirm the staged variables (CORRAL_TICKET, WIKI_TOKEN)" in text(probed)
